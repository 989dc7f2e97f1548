/* wgt devices [--json]: the adapters as a table or JSON. */
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "wgt_commands.h"
#include "wgtensor.h"

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static void print_json(const wgt_adapter_info *a, size_t n)
{
    printf("[\n");
    for (size_t i = 0; i < n; i++) {
        const wgt_adapter_limits *l = &a[i].limits;
        printf("  {\"index\": %d, \"name\": ", a[i].index);
        json_string(a[i].name);
        printf(", \"vendor\": ");
        json_string(a[i].vendor);
        printf(", \"architecture\": ");
        json_string(a[i].architecture);
        printf(", \"driver\": ");
        json_string(a[i].driver);
        printf(", \"backend\": ");
        json_string(a[i].backend);
        printf(", \"type\": \"%s\", \"vendor_id\": %u, \"device_id\": %u,\n", wgt_adapter_type_name(a[i].type),
               a[i].vendor_id, a[i].device_id);
        printf("   \"features\": {\"shader_f16\": %s, \"subgroups\": %s, \"timestamp_query\": %s, \"shader_int64\": %s},\n",
               a[i].shader_f16 ? "true" : "false", a[i].subgroups ? "true" : "false",
               a[i].timestamp_query ? "true" : "false", a[i].shader_int64 ? "true" : "false");
        printf("   \"limits\": {\"max_buffer_size\": %llu, \"max_storage_buffer_binding_size\": %llu, "
               "\"max_storage_buffers_per_shader_stage\": %u, \"max_compute_workgroup_storage_size\": %u, "
               "\"max_compute_invocations_per_workgroup\": %u, \"max_compute_workgroup_size\": [%u, %u, %u], "
               "\"max_compute_workgroups_per_dimension\": %u, \"subgroup_size\": [%u, %u]}}%s\n",
               (unsigned long long)l->max_buffer_size, (unsigned long long)l->max_storage_buffer_binding_size,
               l->max_storage_buffers_per_shader_stage, l->max_compute_workgroup_storage_size,
               l->max_compute_invocations_per_workgroup, l->max_compute_workgroup_size_x,
               l->max_compute_workgroup_size_y, l->max_compute_workgroup_size_z,
               l->max_compute_workgroups_per_dimension, l->subgroup_min_size, l->subgroup_max_size,
               i + 1 < n ? "," : "");
    }
    printf("]\n");
}

static void print_table(const wgt_adapter_info *a, size_t n)
{
    printf("%-3s %-36s %-9s %-10s %-26s %-9s %-9s %s\n", "#", "name", "backend", "type", "driver", "max buf",
           "max bind", "features");
    for (size_t i = 0; i < n; i++) {
        char features[64] = "";
        if (a[i].shader_f16) strcat(features, "f16 ");
        if (a[i].subgroups) strcat(features, "subgroups ");
        if (a[i].timestamp_query) strcat(features, "timestamps ");
        if (a[i].shader_int64) strcat(features, "int64");
        printf("%-3d %-36.36s %-9s %-10s %-26.26s %5llu MiB %5llu MiB %s\n", a[i].index, a[i].name, a[i].backend,
               wgt_adapter_type_name(a[i].type), a[i].driver[0] ? a[i].driver : a[i].vendor,
               (unsigned long long)(a[i].limits.max_buffer_size >> 20),
               (unsigned long long)(a[i].limits.max_storage_buffer_binding_size >> 20), features);
    }
}

int wgt_command_devices(int argc, char **argv)
{
    bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
    wgt_adapter_info *adapters = NULL;
    size_t n = 0;
    wgt_status s = wgt_adapters_enumerate(&adapters, &n);
    if (s == WGT_ERR_NO_ADAPTER || n == 0) {
        if (json) printf("[]\n");
        fprintf(stderr,
                "wgt devices: no WebGPU adapter found. Install a GPU driver with Vulkan support, or Mesa's "
                "lavapipe (mesa-vulkan-drivers) for a CPU adapter; wgtensor can still run with WGT_BACKEND=cpu.\n");
        return 1;
    }
    if (s != WGT_OK) {
        fprintf(stderr, "wgt devices: %s\n", wgt_status_string(s));
        return 1;
    }
    if (json) {
        print_json(adapters, n);
    } else {
        print_table(adapters, n);
        /* Honest listing: say what was not probed (see wgt_adapters_enumerate). */
        bool listed_gl = false;
        for (size_t i = 0; i < n; i++) listed_gl |= strncmp(adapters[i].backend, "OpenGL", 6) == 0;
        if (!listed_gl)
            printf("(OpenGL adapters are not probed: wgtensor prefers Vulkan/Metal/D3D12 for compute; "
                   "WGT_ADAPTER=gl includes them)\n");
    }
    wgt_adapters_free(adapters);
    return 0;
}
