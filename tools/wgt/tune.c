/* wgt tune [--quick] [--cache FILE]: autotunes GEMM tile configs for the
 * current adapter and writes the tuning cache that later runs load. */
#include <stdio.h>
#include <string.h>

#include "wgt_commands.h"
#include "wgtensor.h"

int wgt_command_tune(int argc, char **argv)
{
    bool quick = false;
    const char *cache = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--cache") && i + 1 < argc) cache = argv[++i];
        else {
            fprintf(stderr, "usage: wgt tune [--quick] [--cache FILE]\n");
            return 2;
        }
    }
    wgt_context_options o;
    wgt_context_options_init(&o);
    o.backend = WGT_BACKEND_WEBGPU;
    o.wait_timeout_ms = 600000;
    wgt_context *ctx = wgt_context_create(&o);
    wgt_adapter_info info;
    if (wgt_context_status(ctx) == WGT_OK && wgt_context_adapter_info(ctx, &info) == WGT_OK)
        printf("tuning GEMM on %s (%s, driver %s)\n", info.name, info.backend, info.driver);
    wgt_status s = wgt_context_status(ctx) == WGT_OK ? wgt_tune(ctx, quick, cache, stdout) : wgt_context_status(ctx);
    if (s != WGT_OK) fprintf(stderr, "wgt tune: %s\n", wgt_context_error_message(ctx));
    wgt_context_destroy(ctx);
    return s == WGT_OK ? 0 : 1;
}
