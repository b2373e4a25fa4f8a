// Hyper-parameters and tensor map of the bitnet.cpp architectures (docs/GGUF-FORMAT.md §3.1–§3.3),
// validated.
#include "model/engine/model_config.hpp"

#include <cmath>
#include <sstream>

namespace bitnet::model {
namespace {

// Collects violations instead of stopping at the first, so `verify` can list them all.
class violations {
public:
    void add(std::string msg) { list_.push_back(std::move(msg)); }
    [[nodiscard]] bool empty() const { return list_.empty(); }
    [[nodiscard]] const std::vector<std::string>& list() const { return list_; }
    [[nodiscard]] error as_error(errc code) const {
        std::string joined;
        for (const auto& v : list_)
            joined += (joined.empty() ? "" : "; ") + v;
        return error(code, joined);
    }

private:
    std::vector<std::string> list_;
};

std::string shape_str(const gguf_tensor& t) {
    std::string s = "[";
    for (std::uint32_t d = 0; d < t.n_dims; ++d)
        s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

std::string shape_str(std::uint64_t a, std::uint64_t b) {
    return b == 0 ? "[" + std::to_string(a) + "]"
                  : "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
}

// u32 hyper-parameter `<arch>.<name>`; absent → fallback (if optional) or a violation.
std::uint32_t hparam_u32(const gguf_file& f, const std::string& arch, const char* name,
                         violations& v, std::optional<std::uint32_t> fallback = std::nullopt) {
    const std::string key = arch + "." + name;
    auto r = f.get_uint(key);
    if (!r) {
        if (r.error().value() == errc::not_found && fallback)
            return *fallback;
        if (r.error().value() == errc::not_found)
            v.add("required key '" + key + "' is missing");
        else if (f.find(key) && f.find(key)->type == gguf_value_type::array)
            v.add("key '" + key + "' is a per-layer array; only uniform layers are supported");
        else
            v.add(r.error().message);
        return 0;
    }
    if (*r > 0xffffffffull) {
        v.add("key '" + key + "' = " + std::to_string(*r) + " does not fit in 32 bits");
        return 0;
    }
    return static_cast<std::uint32_t>(*r);
}

float hparam_f32(const gguf_file& f, const std::string& key, violations& v,
                 std::optional<float> fallback) {
    auto r = f.get_float(key);
    if (!r) {
        if (r.error().value() == errc::not_found && fallback)
            return *fallback;
        v.add(r.error().value() == errc::not_found ? "required key '" + key + "' is missing"
                                                   : r.error().message);
        return 0;
    }
    return static_cast<float>(*r);
}

void check_range(violations& v, const char* what, std::uint64_t value, std::uint64_t lo,
                 std::uint64_t hi) {
    if (value < lo || value > hi)
        v.add(std::string(what) + " = " + std::to_string(value) + " is outside [" +
              std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

result<model_config> read_config(const gguf_file& f, violations& v) {
    model_config c;
    auto arch = f.get_string("general.architecture");
    if (!arch)
        return error(errc::invalid_model, arch.error().value() == errc::not_found
                                              ? "general.architecture is missing: not a model file?"
                                              : arch.error().message);
    c.arch_name = std::string(*arch);
    if (c.arch_name == "bitnet-b1.58" || c.arch_name == "bitnet-25") {
        c.arch = architecture::bitnet_b158;
    } else if (c.arch_name == "bitnet") {
        c.arch = architecture::bitnet;
        c.activation = ffn_activation::silu;
    } else if (c.arch_name == "llama") {
        c.arch = architecture::llama;
        c.activation = ffn_activation::silu;
        c.rope = rope_style::norm;
        c.has_sub_norms = false;
    } else {
        return error(errc::unsupported,
                     "architecture '" + c.arch_name +
                         "' is not supported (supported: bitnet-b1.58, bitnet-25, bitnet, llama)");
    }
    const std::string& a = c.arch_name;
    c.n_ctx_train = hparam_u32(f, a, "context_length", v);
    c.n_embd = hparam_u32(f, a, "embedding_length", v);
    c.n_layer = hparam_u32(f, a, "block_count", v);
    c.n_ff = hparam_u32(f, a, "feed_forward_length", v);
    c.n_head = hparam_u32(f, a, "attention.head_count", v);
    c.n_head_kv = hparam_u32(f, a, "attention.head_count_kv", v, c.n_head);
    c.rms_eps = hparam_f32(f, a + ".attention.layer_norm_rms_epsilon", v, std::nullopt);
    c.rope_base = hparam_f32(f, a + ".rope.freq_base", v, 10000.0f);
    const std::uint32_t default_head_dim = c.n_head ? c.n_embd / c.n_head : 0;
    c.head_dim = hparam_u32(f, a, "attention.key_length", v, default_head_dim);
    const auto value_length = hparam_u32(f, a, "attention.value_length", v, c.head_dim);
    c.n_rot = hparam_u32(f, a, "rope.dimension_count", v, c.head_dim);
    // bitnet archs always take logits from token_embd, even when an `output` tensor exists.
    c.tied_output = c.arch != architecture::llama || f.find_tensor("output.weight") == nullptr;
    if (auto ft = f.get_uint("general.file_type"))
        c.file_type = static_cast<std::uint32_t>(*ft);

    std::uint32_t n_tokens = 0;
    if (const auto* toks = f.find("tokenizer.ggml.tokens");
        toks && toks->type == gguf_value_type::array)
        n_tokens = static_cast<std::uint32_t>(toks->array_count);
    c.n_vocab = hparam_u32(f, a, "vocab_size", v, n_tokens);
    if (!v.empty())
        return v.as_error(errc::invalid_model);

    check_range(v, "context_length", c.n_ctx_train, 1, 1u << 24);
    check_range(v, "embedding_length", c.n_embd, 1, 1u << 16);
    check_range(v, "block_count", c.n_layer, 1, 1024);
    check_range(v, "feed_forward_length", c.n_ff, 1, 1u << 18);
    check_range(v, "attention.head_count", c.n_head, 1, 1024);
    check_range(v, "attention.head_count_kv", c.n_head_kv, 1, 1024);
    check_range(v, "vocab_size", c.n_vocab, 1, 1u << 22);
    if (c.n_head && c.n_head_kv && c.n_head % c.n_head_kv != 0)
        v.add("attention.head_count " + std::to_string(c.n_head) +
              " is not a multiple of head_count_kv " + std::to_string(c.n_head_kv));
    if (c.n_head && c.n_embd % c.n_head != 0 && default_head_dim == c.head_dim)
        v.add("embedding_length " + std::to_string(c.n_embd) + " is not divisible by head_count " +
              std::to_string(c.n_head));
    if (c.head_dim == 0 || c.head_dim % 2 != 0 || c.head_dim > 1024)
        v.add("head dimension " + std::to_string(c.head_dim) + " must be even and in [2, 1024]");
    if (value_length != c.head_dim)
        v.add("attention.value_length " + std::to_string(value_length) +
              " differs from key_length " + std::to_string(c.head_dim) + " (unsupported)");
    if (c.n_rot != c.head_dim)
        v.add("rope.dimension_count " + std::to_string(c.n_rot) +
              " must equal the head dimension " + std::to_string(c.head_dim) + " for " +
              c.arch_name + " (\"invalid n_rot\")");
    if (!(c.rms_eps > 0.0f) || !std::isfinite(c.rms_eps) || c.rms_eps > 1.0f)
        v.add("layer_norm_rms_epsilon " + std::to_string(c.rms_eps) + " must be in (0, 1]");
    if (!(c.rope_base > 0.0f) || !std::isfinite(c.rope_base))
        v.add("rope.freq_base " + std::to_string(c.rope_base) + " must be positive and finite");
    if (n_tokens != 0 && n_tokens != c.n_vocab)
        v.add("vocab_size " + std::to_string(c.n_vocab) + " differs from the " +
              std::to_string(n_tokens) + " tokens in tokenizer.ggml.tokens");
    if (!v.empty())
        return v.as_error(errc::invalid_model);
    return c;
}

struct expected_tensor {
    const gguf_tensor** slot;
    std::string name;
    std::uint64_t ne0, ne1; ///< ne1 == 0 → 1-D
    enum kind { norm, projection, embedding, scale } k;
    bool required;
};

void check_tensor(const gguf_file& f, const expected_tensor& e, violations& v) {
    const auto* t = f.find_tensor(e.name);
    *e.slot = t;
    if (!t) {
        if (e.required)
            v.add("tensor '" + e.name + "' " + shape_str(e.ne0, e.ne1) + " is missing");
        return;
    }
    const bool one_d = e.ne1 == 0;
    const bool shape_ok =
        one_d ? (t->ne[0] == e.ne0 && t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1)
              : (t->ne[0] == e.ne0 && t->ne[1] == e.ne1 && t->ne[2] == 1 && t->ne[3] == 1);
    if (!shape_ok)
        v.add("tensor '" + e.name + "' has shape " + shape_str(*t) + ", expected " +
              shape_str(e.ne0, e.ne1));
    switch (e.k) {
    case expected_tensor::norm:
    case expected_tensor::scale:
        if (t->type != ggml_type::f32 && t->type != ggml_type::f16)
            v.add("tensor '" + e.name + "' has type " + std::string(ggml_type_name(t->type)) +
                  ", expected F32");
        break;
    case expected_tensor::embedding:
        if (!is_embedding_type(t->type))
            v.add("tensor '" + e.name + "' has type " + std::string(ggml_type_name(t->type)) +
                  ", expected F16, F32, BF16, Q8_0, Q6_K or Q4_0");
        break;
    case expected_tensor::projection:
        if (!is_projection_type(t->type))
            v.add("tensor '" + e.name + "' has type " + std::string(ggml_type_name(t->type)) +
                  ", expected I2_S, TL1, TL2 (or F32/F16 ternary values)");
        else if (t->type == ggml_type::i2_s && t->ne[0] % 128 != 0)
            v.add("I2_S tensor '" + e.name + "' has K = " + std::to_string(t->ne[0]) +
                  ", not a multiple of 128 (the I2_S block size)");
        break;
    }
}

model_tensors map_tensors(const gguf_file& f, const model_config& c, violations& v) {
    model_tensors m;
    const std::uint64_t e = c.n_embd, ff = c.n_ff, q = c.n_embd_q(), kv = c.n_embd_kv();
    std::vector<expected_tensor> want = {
        {&m.token_embd, "token_embd.weight", e, c.n_vocab, expected_tensor::embedding, true},
        {&m.output_norm, "output_norm.weight", e, 0, expected_tensor::norm, true},
        {&m.output, "output.weight", e, c.n_vocab, expected_tensor::embedding, false},
        {&m.rope_freqs, "rope_freqs.weight", c.head_dim / 2, 0, expected_tensor::norm, false},
    };
    m.layers.resize(c.n_layer);
    for (std::uint32_t i = 0; i < c.n_layer; ++i) {
        auto& l = m.layers[i];
        const std::string p = "blk." + std::to_string(i) + ".";
        const bool sub = c.has_sub_norms;
        want.push_back({&l.attn_norm, p + "attn_norm.weight", e, 0, expected_tensor::norm, true});
        want.push_back({&l.wq, p + "attn_q.weight", e, q, expected_tensor::projection, true});
        want.push_back({&l.wk, p + "attn_k.weight", e, kv, expected_tensor::projection, true});
        want.push_back({&l.wv, p + "attn_v.weight", e, kv, expected_tensor::projection, true});
        want.push_back({&l.wo, p + "attn_output.weight", q, e, expected_tensor::projection, true});
        want.push_back({&l.ffn_norm, p + "ffn_norm.weight", e, 0, expected_tensor::norm, true});
        want.push_back(
            {&l.w_gate, p + "ffn_gate.weight", e, ff, expected_tensor::projection, true});
        want.push_back({&l.w_up, p + "ffn_up.weight", e, ff, expected_tensor::projection, true});
        want.push_back(
            {&l.w_down, p + "ffn_down.weight", ff, e, expected_tensor::projection, true});
        if (sub) {
            want.push_back(
                {&l.attn_sub_norm, p + "attn_sub_norm.weight", e, 0, expected_tensor::norm, true});
            want.push_back(
                {&l.ffn_sub_norm, p + "ffn_sub_norm.weight", ff, 0, expected_tensor::norm, true});
        }
        if (c.arch == architecture::bitnet) {
            const std::pair<const gguf_tensor**, const char*> scales[] = {
                {&l.scale_q, "attn_q.scale"},      {&l.scale_k, "attn_k.scale"},
                {&l.scale_v, "attn_v.scale"},      {&l.scale_o, "attn_output.scale"},
                {&l.scale_gate, "ffn_gate.scale"}, {&l.scale_up, "ffn_up.scale"},
                {&l.scale_down, "ffn_down.scale"}};
            for (const auto& [slot, name] : scales)
                want.push_back({slot, p + name, 1, 0, expected_tensor::scale, false});
        }
    }
    for (const auto& w : want)
        check_tensor(f, w, v);
    // Bias tensors exist in no known file; refuse rather than silently ignore them.
    for (const auto& t : f.tensors())
        if (std::string_view(t.name).ends_with(".bias"))
            v.add("tensor '" + std::string(t.name) + "': bias tensors are not supported");
    return m;
}

} // namespace

bool is_projection_type(ggml_type t) noexcept {
    return t == ggml_type::i2_s || t == ggml_type::tl1 || t == ggml_type::tl2 ||
           t == ggml_type::f32 || t == ggml_type::f16;
}

bool is_embedding_type(ggml_type t) noexcept {
    return t == ggml_type::f16 || t == ggml_type::f32 || t == ggml_type::bf16 ||
           t == ggml_type::q8_0 || t == ggml_type::q6_k || t == ggml_type::q4_0;
}

const char* architecture_name(architecture a) noexcept {
    switch (a) {
    case architecture::bitnet_b158:
        return "bitnet-b1.58";
    case architecture::bitnet:
        return "bitnet";
    case architecture::llama:
        return "llama";
    }
    return "?";
}

result<model_config> read_model_config(const gguf_file& f) {
    violations v;
    return read_config(f, v);
}

result<model_tensors> map_model_tensors(const gguf_file& f, const model_config& c) {
    violations v;
    auto m = map_tensors(f, c, v);
    if (!v.empty())
        return v.as_error(errc::invalid_model);
    return m;
}

std::vector<std::string> verify_model(const gguf_file& f) {
    violations v;
    auto c = read_config(f, v);
    if (!c) {
        if (v.empty())
            v.add(c.error().message);
        return v.list();
    }
    map_tensors(f, *c, v);
    if (!f.find("tokenizer.ggml.model"))
        v.add("tokenizer metadata 'tokenizer.ggml.model' is missing");
    else if (!f.find("tokenizer.ggml.tokens"))
        v.add("tokenizer metadata 'tokenizer.ggml.tokens' is missing");
    return v.list();
}

std::uint64_t parameter_count(const model_config& c) {
    const std::uint64_t e = c.n_embd, q = c.n_embd_q(), kv = c.n_embd_kv(), ff = c.n_ff;
    const std::uint64_t per_layer = e * q + 2 * e * kv + q * e + 3 * e * ff;
    return static_cast<std::uint64_t>(c.n_vocab) * e + c.n_layer * per_layer;
}

} // namespace bitnet::model
