/* config.json of a Hugging Face Llama-like model -> llama_config (llama.h).
 * Both the transformers 4.x spelling (rope_theta, rope_scaling) and the 5.x
 * one (rope_parameters) are read. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llama.h"
#include "llm_json.h"

static bool get_int(const llm_json *root, const char *key, int lo, int hi, int def, int *out, char *msg,
                    size_t msg_size)
{
    const llm_json *v = llm_json_get(root, key);
    if (!v || v->type == LLM_JSON_NULL) {
        if (def == INT32_MIN) {
            snprintf(msg, msg_size, "config.json: \"%s\" is missing", key);
            return false;
        }
        *out = def;
        return true;
    }
    if (v->type != LLM_JSON_NUMBER || v->number != floor(v->number) || v->number < lo || v->number > hi) {
        snprintf(msg, msg_size, "config.json: \"%s\" must be an integer in [%d, %d]", key, lo, hi);
        return false;
    }
    *out = (int)v->number;
    return true;
}

static bool get_num(const llm_json *obj, const char *key, double lo, double hi, double def, double *out, char *msg,
                    size_t msg_size)
{
    const llm_json *v = llm_json_get(obj, key);
    if (!v || v->type == LLM_JSON_NULL) return *out = def, true;
    if (v->type != LLM_JSON_NUMBER || !(v->number >= lo && v->number <= hi)) {
        snprintf(msg, msg_size, "config.json: \"%s\" must be a number in [%g, %g]", key, lo, hi);
        return false;
    }
    *out = v->number;
    return true;
}

static bool get_bool(const llm_json *root, const char *key, bool def)
{
    const llm_json *v = llm_json_get(root, key);
    return v && v->type == LLM_JSON_BOOL ? v->boolean : def;
}

static bool read_rope(const llm_json *root, llama_config *c, char *msg, size_t msg_size)
{
    /* 5.x: rope_parameters {rope_type, rope_theta, ...}; 4.x: rope_theta + rope_scaling */
    const llm_json *params = llm_json_get(root, "rope_parameters");
    if (!params || params->type != LLM_JSON_OBJECT) params = llm_json_get(root, "rope_scaling");
    double theta_root = 10000.0;
    if (!get_num(root, "rope_theta", 1.0, 1e12, 10000.0, &theta_root, msg, msg_size)) return false;
    if (!params || params->type == LLM_JSON_NULL) return c->rope_theta = theta_root, true;
    if (params->type != LLM_JSON_OBJECT) {
        snprintf(msg, msg_size, "config.json: rope parameters must be an object or null");
        return false;
    }
    if (!get_num(params, "rope_theta", 1.0, 1e12, theta_root, &c->rope_theta, msg, msg_size)) return false;
    const llm_json *type = llm_json_get(params, "rope_type");
    if (!type) type = llm_json_get(params, "type");
    const char *t = type && type->type == LLM_JSON_STRING ? type->string : "default";
    if (strcmp(t, "default") == 0) return true;
    if (strcmp(t, "llama3") != 0) {
        snprintf(msg, msg_size, "config.json: rope type \"%s\" is not supported (default, llama3)", t);
        return false;
    }
    c->rope_llama3 = true;
    double orig = 0;
    if (!get_num(params, "factor", 1.0, 1e6, NAN, &c->rope_factor, msg, msg_size) ||
        !get_num(params, "low_freq_factor", 1e-6, 1e6, NAN, &c->rope_low_freq_factor, msg, msg_size) ||
        !get_num(params, "high_freq_factor", 1e-6, 1e6, NAN, &c->rope_high_freq_factor, msg, msg_size) ||
        !get_num(params, "original_max_position_embeddings", 1, 1 << 24, NAN, &orig, msg, msg_size))
        return false;
    if (isnan(c->rope_factor) || isnan(c->rope_low_freq_factor) || isnan(c->rope_high_freq_factor) || isnan(orig) ||
        !(c->rope_high_freq_factor > c->rope_low_freq_factor)) {
        snprintf(msg, msg_size, "config.json: llama3 rope scaling needs factor, low_freq_factor < high_freq_factor "
                                "and original_max_position_embeddings");
        return false;
    }
    c->rope_original_max = (int)orig;
    return true;
}

static int first_token_id(const llm_json *root, const char *key)
{
    const llm_json *v = llm_json_get(root, key);
    if (v && v->type == LLM_JSON_ARRAY && v->length > 0) v = &v->items[0];
    return v && v->type == LLM_JSON_NUMBER && v->number >= 0 && v->number < (1 << 24) ? (int)v->number : -1;
}

static bool parse_root(const llm_json *root, llama_config *c, char *msg, size_t msg_size)
{
    if (root->type != LLM_JSON_OBJECT) return snprintf(msg, msg_size, "config.json: not an object"), false;
    const llm_json *mt = llm_json_get(root, "model_type");
    const char *type = mt && mt->type == LLM_JSON_STRING ? mt->string : "";
    static const char *const supported[] = {"llama", "qwen2", "qwen3", "mistral"};
    bool known = false;
    for (size_t i = 0; i < sizeof(supported) / sizeof(supported[0]); i++) known |= strcmp(type, supported[i]) == 0;
    if (!known) {
        snprintf(msg, msg_size, "config.json: model_type \"%s\" is not a supported architecture (llama, qwen2, qwen3, "
                 "mistral)", type);
        return false;
    }
    snprintf(c->model_type, sizeof(c->model_type), "%s", type);
    const llm_json *act = llm_json_get(root, "hidden_act");
    if (act && (act->type != LLM_JSON_STRING || strcmp(act->string, "silu") != 0)) {
        snprintf(msg, msg_size, "config.json: hidden_act must be \"silu\" (SwiGLU)");
        return false;
    }
    if (get_bool(root, "mlp_bias", false)) return snprintf(msg, msg_size, "config.json: mlp_bias is not supported"), false;
    const llm_json *sw = llm_json_get(root, "sliding_window");
    if (get_bool(root, "use_sliding_window", false) || (strcmp(type, "mistral") == 0 && sw && sw->type == LLM_JSON_NUMBER))
        return snprintf(msg, msg_size, "config.json: sliding-window attention is not supported"), false;
    const int big = 1 << 20;
    if (!get_int(root, "vocab_size", 1, 1 << 24, INT32_MIN, &c->vocab_size, msg, msg_size) ||
        !get_int(root, "hidden_size", 1, big, INT32_MIN, &c->hidden_size, msg, msg_size) ||
        !get_int(root, "intermediate_size", 1, big, INT32_MIN, &c->intermediate_size, msg, msg_size) ||
        !get_int(root, "num_hidden_layers", 1, 1024, INT32_MIN, &c->n_layers, msg, msg_size) ||
        !get_int(root, "num_attention_heads", 1, 4096, INT32_MIN, &c->n_heads, msg, msg_size) ||
        !get_int(root, "num_key_value_heads", 1, 4096, c->n_heads, &c->n_kv_heads, msg, msg_size) ||
        !get_int(root, "max_position_embeddings", 1, 1 << 24, 4096, &c->max_position, msg, msg_size))
        return false;
    if (!get_int(root, "head_dim", 2, 4096, c->hidden_size / c->n_heads, &c->head_dim, msg, msg_size)) return false;
    if (c->n_heads % c->n_kv_heads != 0 || c->head_dim % 2 != 0 ||
        (!llm_json_get(root, "head_dim") && c->hidden_size % c->n_heads != 0)) {
        snprintf(msg, msg_size, "config.json: heads %d, kv heads %d, head_dim %d: heads must be a multiple of kv heads "
                 "and head_dim even (hidden_size a multiple of heads when head_dim is absent)",
                 c->n_heads, c->n_kv_heads, c->head_dim);
        return false;
    }
    if (!get_num(root, "rms_norm_eps", 0.0, 1.0, 1e-6, &c->rms_eps, msg, msg_size)) return false;
    if (!read_rope(root, c, msg, msg_size)) return false;
    /* Qwen2 always has q/k/v biases; others say so with attention_bias */
    c->attention_bias = get_bool(root, "attention_bias", strcmp(type, "qwen2") == 0);
    c->qk_norm = strcmp(type, "qwen3") == 0;
    c->tie_embeddings = get_bool(root, "tie_word_embeddings", false);
    c->bos_token_id = first_token_id(root, "bos_token_id");
    c->eos_token_id = first_token_id(root, "eos_token_id");
    return true;
}

bool llama_config_parse(const char *json, size_t size, llama_config *cfg, char *msg, size_t msg_size)
{
    llm_json root;
    char jmsg[200];
    memset(cfg, 0, sizeof(*cfg));
    if (!llm_json_parse(json, size, &root, jmsg, sizeof(jmsg))) {
        snprintf(msg, msg_size, "config.json: %s", jmsg);
        return false;
    }
    bool ok = parse_root(&root, cfg, msg, msg_size);
    llm_json_free(&root);
    return ok;
}
