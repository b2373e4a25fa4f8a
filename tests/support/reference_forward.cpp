// The reference forward pass (see reference_forward.hpp). Read top to bottom: loading, the three
// numeric building blocks (int8 quantisation, BitLinear, RMSNorm), RoPE, attention, the step.
// Every float operation mirrors the order ggml uses where it matters (docs/GGUF-FORMAT.md §3.6);
// sums whose order ggml leaves to SIMD lanes are taken in double here, i.e. as exactly as we can.
#include "support/reference_forward.hpp"

#include "support/f16_round.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace bitnet::test {
namespace {

using model::ggml_type;
using model::gguf_file;
using model::gguf_tensor;

// ---------------------------------------------------------------------------------- loading

result<const gguf_tensor*> need_tensor(const gguf_file& f, const std::string& name) {
    const gguf_tensor* t = f.find_tensor(name);
    if (t == nullptr)
        return error(errc::not_found, "reference: tensor '" + name + "' is missing");
    return t;
}

result<std::uint32_t> need_u32(const gguf_file& f, const std::string& key) {
    auto v = f.get_uint(key);
    if (!v)
        return error(v.error().value(), "reference: key '" + key + "': " + v.error().message);
    return static_cast<std::uint32_t>(*v);
}

// F32/F16 tensor of exactly n elements, widened to float.
result<std::vector<float>> to_floats(const gguf_tensor& t, std::uint64_t n) {
    if (t.n_elements() != n)
        return error(errc::invalid_model, "reference: tensor '" + std::string(t.name) + "' has " +
                                              std::to_string(t.n_elements()) +
                                              " elements, expected " + std::to_string(n));
    std::vector<float> out(n);
    if (t.type == ggml_type::f32) {
        std::memcpy(out.data(), t.data, n * sizeof(float));
    } else if (t.type == ggml_type::f16) {
        for (std::uint64_t i = 0; i < n; ++i) {
            std::uint16_t h = 0;
            std::memcpy(&h, t.data + 2 * i, 2);
            out[i] = f16_bits_to_f32(h);
        }
    } else {
        return error(errc::unsupported,
                     "reference: tensor '" + std::string(t.name) + "' has type " +
                         std::string(model::ggml_type_name(t.type)) + "; only F32/F16 here");
    }
    return out;
}

result<std::vector<float>> load_vector(const gguf_file& f, const std::string& name,
                                       std::uint64_t n) {
    auto t = need_tensor(f, name);
    if (!t)
        return t.error();
    return to_floats(**t, n);
}

result<reference_linear> load_linear(const gguf_file& f, const std::string& name,
                                     std::uint32_t n_in, std::uint32_t n_out) {
    auto t = need_tensor(f, name + ".weight");
    if (!t)
        return t.error();
    const gguf_tensor& w = **t;
    if (w.ne[0] != n_in || w.ne[1] != n_out)
        return error(errc::invalid_model,
                     "reference: '" + name + ".weight' is [" + std::to_string(w.ne[0]) + ", " +
                         std::to_string(w.ne[1]) + "], expected [" + std::to_string(n_in) + ", " +
                         std::to_string(n_out) + "]");
    reference_linear lin;
    lin.n_in = n_in;
    lin.n_out = n_out;
    if (w.type == ggml_type::i2_s) {
        auto d = reference_decode_i2s(w);
        if (!d)
            return d.error();
        lin.w = std::move(*d);
    } else {
        auto d = to_floats(w, std::uint64_t{n_in} * n_out);
        if (!d)
            return d.error();
        lin.w = std::move(*d);
    }
    if (const gguf_tensor* s = f.find_tensor(name + ".scale")) {
        auto v = to_floats(*s, 1);
        if (!v)
            return v.error();
        lin.out_multiplier = (*v)[0];
    }
    if (f.find_tensor(name + ".bias") != nullptr)
        return error(errc::unsupported, "reference: bias tensor '" + name + ".bias' not handled");
    return lin;
}

// Codes t ∈ {−1, 0, 1} and the tensor scale, derived once from the float matrix.
void prepare(reference_linear& w) {
    if (!w.ternary.empty())
        return;
    float scale = 0.0f;
    for (float v : w.w)
        scale = std::max(scale, std::fabs(v));
    w.w_scale = scale;
    w.ternary.resize(w.w.size());
    for (std::size_t i = 0; i < w.w.size(); ++i)
        w.ternary[i] = static_cast<std::int8_t>(w.w[i] > 0.0f ? 1 : (w.w[i] < 0.0f ? -1 : 0));
}

// ---------------------------------------------------------------- RoPE (docs/GGUF-FORMAT.md §3.6)

// Rotates each head of `x` ([n_heads][head_dim]) to position `pos`. Angles are built the way
// ggml_rope_cache_init does: float theta, multiplied by theta_scale once per pair.
void rope(std::vector<float>& x, std::uint32_t n_heads, std::uint32_t head_dim, int pos,
          const reference_model& m) {
    const std::uint32_t half = head_dim / 2;
    const float theta_scale = std::pow(m.rope_base, -2.0f / static_cast<float>(head_dim));
    std::vector<float> cos_t(half), sin_t(half);
    float theta = static_cast<float>(pos);
    for (std::uint32_t i = 0; i < half; ++i) {
        const float ff = m.rope_freqs.empty() ? 1.0f : m.rope_freqs[i];
        cos_t[i] = std::cos(theta / ff);
        sin_t[i] = std::sin(theta / ff);
        theta *= theta_scale;
    }
    const bool neox = m.arch != reference_arch::llama;
    for (std::uint32_t h = 0; h < n_heads; ++h) {
        float* v = x.data() + std::size_t{h} * head_dim;
        for (std::uint32_t i = 0; i < half; ++i) {
            // NEOX pairs (i, i + d/2); NORM pairs (2i, 2i + 1).
            const std::uint32_t a = neox ? i : 2 * i;
            const std::uint32_t b = neox ? i + half : 2 * i + 1;
            const float x0 = v[a];
            const float x1 = v[b];
            v[a] = x0 * cos_t[i] - x1 * sin_t[i];
            v[b] = x0 * sin_t[i] + x1 * cos_t[i];
        }
    }
}

std::vector<float> rounded_f16(std::span<const float> x) {
    std::vector<float> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        out[i] = to_f16_round(x[i]);
    return out;
}

// ----------------------------------------------------------- attention (docs/GGUF-FORMAT.md §3.4)

// Output [n_head * head_dim] for the query `q` (already roped) at position `pos`, over cached
// rows [0, pos]. `decode`: round the probabilities to F16 before the V product
// (docs/GGUF-FORMAT.md §3.6).
std::vector<float> attend(const reference_model& m, const reference_state& st, std::uint32_t layer,
                          const std::vector<float>& q, int pos, bool decode) {
    const std::uint32_t hd = m.head_dim;
    const std::uint32_t kv_row = m.n_head_kv * hd;
    const std::uint32_t group = m.n_head / m.n_head_kv;
    const float kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const auto n_kv = static_cast<std::size_t>(pos) + 1; // causal: keys 0..pos
    const std::vector<float>& kc = st.k[layer];
    const std::vector<float>& vc = st.v[layer];

    std::vector<float> out(std::size_t{m.n_head} * hd);
    std::vector<float> p(n_kv);
    for (std::uint32_t h = 0; h < m.n_head; ++h) {
        const std::uint32_t kvh = h / group;
        const std::vector<float> q16 =
            rounded_f16(std::span<const float>(q).subspan(std::size_t{h} * hd, hd));
        float max_s = -INFINITY;
        for (std::size_t j = 0; j < n_kv; ++j) {
            const float* k = kc.data() + j * kv_row + std::size_t{kvh} * hd;
            double dot = 0.0;
            for (std::uint32_t d = 0; d < hd; ++d)
                dot += static_cast<double>(k[d]) * q16[d];
            p[j] = static_cast<float>(dot) * kq_scale;
            max_s = std::max(max_s, p[j]);
        }
        // ggml_soft_max: expf in float, the sum in double, then one float multiply by 1/sum.
        double sum = 0.0;
        for (std::size_t j = 0; j < n_kv; ++j) {
            p[j] = std::exp(p[j] - max_s);
            sum += p[j];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (std::size_t j = 0; j < n_kv; ++j) {
            p[j] *= inv;
            if (decode)
                p[j] = to_f16_round(p[j]);
        }
        for (std::uint32_t d = 0; d < hd; ++d) {
            double acc = 0.0;
            for (std::size_t j = 0; j < n_kv; ++j)
                acc += static_cast<double>(vc[j * kv_row + std::size_t{kvh} * hd + d]) * p[j];
            out[std::size_t{h} * hd + d] = static_cast<float>(acc);
        }
    }
    return out;
}

} // namespace

// ------------------------------------------------------------------------- public: loading

result<std::vector<float>> reference_decode_i2s(const gguf_tensor& t) {
    const std::uint64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    if (t.type != ggml_type::i2_s || n % 128 != 0 || t.n_bytes < n / 4 + 4)
        return error(errc::bad_format, "reference: '" + std::string(t.name) +
                                           "' is not an I2_S tensor of whole 128-code blocks");
    float scale = 0.0f;
    std::memcpy(&scale, t.data + n / 4, sizeof scale);
    std::vector<float> w(n);
    // Block b: 128 codes in 32 bytes; code j at byte j % 32, bits 6 − 2·(j / 32). Code − 1 is
    // the weight's sign; code 3 (never written) reads as 0.
    for (std::uint64_t b = 0; b < n / 128; ++b) {
        const std::uint8_t* block = t.data + 32 * b;
        for (std::uint32_t j = 0; j < 128; ++j) {
            const int code = (block[j % 32] >> (6 - 2 * (j / 32))) & 3;
            const float sign = code == 0 ? -1.0f : (code == 2 ? 1.0f : 0.0f);
            w[128 * b + j] = sign * scale;
        }
    }
    return w;
}

namespace {

/// Layer `l` of `f`, its shapes from `m`'s hyperparameters.
result<reference_layer> load_reference_layer(const gguf_file& f, const reference_model& m,
                                             std::uint32_t l) {
    const bool sub_norms = m.arch != reference_arch::llama;
    const std::uint32_t n_q = m.n_head * m.head_dim;
    const std::uint32_t n_kv = m.n_head_kv * m.head_dim;
    const std::string p = "blk." + std::to_string(l) + ".";
    reference_layer L;
    auto vec = [&](const char* name, std::uint32_t n, std::vector<float>& dst) -> result<void> {
        auto v = load_vector(f, p + name + ".weight", n);
        if (!v)
            return v.error();
        dst = std::move(*v);
        return {};
    };
    auto lin = [&](const char* name, std::uint32_t n_in, std::uint32_t n_out,
                   reference_linear& dst) -> result<void> {
        auto v = load_linear(f, p + name, n_in, n_out);
        if (!v)
            return v.error();
        dst = std::move(*v);
        return {};
    };
    BITNET_TRY(vec("attn_norm", m.n_embd, L.attn_norm));
    BITNET_TRY(vec("ffn_norm", m.n_embd, L.ffn_norm));
    if (sub_norms) {
        BITNET_TRY(vec("attn_sub_norm", n_q, L.attn_sub_norm));
        BITNET_TRY(vec("ffn_sub_norm", m.n_ff, L.ffn_sub_norm));
    }
    BITNET_TRY(lin("attn_q", m.n_embd, n_q, L.wq));
    BITNET_TRY(lin("attn_k", m.n_embd, n_kv, L.wk));
    BITNET_TRY(lin("attn_v", m.n_embd, n_kv, L.wv));
    BITNET_TRY(lin("attn_output", n_q, m.n_embd, L.wo));
    BITNET_TRY(lin("ffn_gate", m.n_embd, m.n_ff, L.w_gate));
    BITNET_TRY(lin("ffn_up", m.n_embd, m.n_ff, L.w_up));
    BITNET_TRY(lin("ffn_down", m.n_ff, m.n_embd, L.w_down));
    return L;
}

} // namespace

result<reference_model> load_reference_model(const gguf_file& f) {
    auto arch_name = f.get_string("general.architecture");
    if (!arch_name)
        return arch_name.error();
    reference_model m;
    const std::string a(*arch_name);
    if (a == "bitnet-b1.58" || a == "bitnet-25")
        m.arch = reference_arch::bitnet_b158;
    else if (a == "bitnet")
        m.arch = reference_arch::bitnet;
    else if (a == "llama")
        m.arch = reference_arch::llama;
    else
        return error(errc::unsupported, "reference: architecture '" + a + "'");

#define REF_U32(dst, key)                                                                          \
    do {                                                                                           \
        auto v_ = need_u32(f, a + key);                                                            \
        if (!v_)                                                                                   \
            return v_.error();                                                                     \
        dst = *v_;                                                                                 \
    } while (0)
    REF_U32(m.n_embd, ".embedding_length");
    REF_U32(m.n_layer, ".block_count");
    REF_U32(m.n_ff, ".feed_forward_length");
    REF_U32(m.n_head, ".attention.head_count");
#undef REF_U32
    auto n_head_kv = f.get_uint(a + ".attention.head_count_kv");
    m.n_head_kv = n_head_kv ? static_cast<std::uint32_t>(*n_head_kv) : m.n_head;
    auto key_length = f.get_uint(a + ".attention.key_length");
    m.head_dim = key_length ? static_cast<std::uint32_t>(*key_length) : m.n_embd / m.n_head;
    auto eps = f.get_float(a + ".attention.layer_norm_rms_epsilon");
    if (!eps)
        return eps.error();
    m.rms_eps = static_cast<float>(*eps);
    auto base = f.get_float(a + ".rope.freq_base");
    m.rope_base = base ? static_cast<float>(*base) : 10000.0f;
    if (m.n_head == 0 || m.n_head_kv == 0 || m.n_head % m.n_head_kv != 0 || m.head_dim % 2 != 0)
        return error(errc::invalid_model, "reference: bad head counts");

    auto embd = need_tensor(f, "token_embd.weight");
    if (!embd)
        return embd.error();
    m.n_vocab = static_cast<std::uint32_t>((*embd)->ne[1]);
    auto te = to_floats(**embd, std::uint64_t{m.n_embd} * m.n_vocab);
    if (!te)
        return te.error();
    m.token_embd = std::move(*te);
    auto on = load_vector(f, "output_norm.weight", m.n_embd);
    if (!on)
        return on.error();
    m.output_norm = std::move(*on);
    if (m.arch == reference_arch::llama && f.find_tensor("output.weight") != nullptr) {
        auto out = load_vector(f, "output.weight", std::uint64_t{m.n_embd} * m.n_vocab);
        if (!out)
            return out.error();
        m.output = std::move(*out);
    }
    if (m.arch == reference_arch::bitnet_b158 && f.find_tensor("rope_freqs.weight") != nullptr) {
        auto rf = load_vector(f, "rope_freqs.weight", m.head_dim / 2);
        if (!rf)
            return rf.error();
        m.rope_freqs = std::move(*rf);
    }

    for (std::uint32_t l = 0; l < m.n_layer; ++l) {
        auto layer = load_reference_layer(f, m, l);
        if (!layer)
            return layer.error();
        m.layers.push_back(std::move(*layer));
    }
    return m;
}

// ------------------------------------------------------------- public: numeric building blocks

std::vector<std::int8_t> reference_quantize_i8(std::span<const float> x, float& act_scale) {
    // quantize_row_i8_s: max in double with a 1e-5 floor, s = (float)(127 / max), codes
    // nearest-even of the float product x·s, clamped to int8.
    double max = 1e-5;
    for (float v : x)
        max = std::max(max, std::fabs(static_cast<double>(v)));
    const auto s = static_cast<float>(127.0 / max);
    act_scale = s;
    std::vector<std::int8_t> q(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float r = std::nearbyint(x[i] * s); // default rounding mode: half to even
        q[i] = static_cast<std::int8_t>(std::clamp(r, -128.0f, 127.0f));
    }
    return q;
}

std::vector<float> reference_bitlinear(reference_linear& w, std::span<const float> x) {
    prepare(w);
    float act_scale = 0.0f;
    const std::vector<std::int8_t> q = reference_quantize_i8(x, act_scale);
    std::vector<float> y(w.n_out);
    for (std::uint32_t r = 0; r < w.n_out; ++r) {
        const std::int8_t* t = w.ternary.data() + std::size_t{r} * w.n_in;
        std::int64_t dot = 0; // = Σ code·q − Σ q, exact
        for (std::uint32_t k = 0; k < w.n_in; ++k)
            dot += t[k] * q[k];
        y[r] = static_cast<float>(dot) / act_scale * w.w_scale;
        if (w.out_multiplier != 1.0f)
            y[r] *= w.out_multiplier;
    }
    return y;
}

std::vector<float> reference_rmsnorm(std::span<const float> x, std::span<const float> g,
                                     float eps) {
    double sum = 0.0;
    for (float v : x)
        sum += static_cast<double>(v * v); // float product, double sum (ggml)
    const double mean = sum / static_cast<double>(x.size());
    const float scale = 1.0f / std::sqrt(static_cast<float>(mean + eps));
    std::vector<float> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        y[i] = (x[i] * scale) * g[i];
    return y;
}

// ----------------------------------------------------------------------- public: the step

std::vector<float> reference_step(reference_model& m, reference_state& st,
                                  std::span<const std::int32_t> tokens, int pos0,
                                  int decoded_from) {
    if (tokens.empty() || pos0 < 0 || static_cast<std::uint32_t>(pos0) != st.n_past)
        throw std::invalid_argument("reference_step: pos0 must equal the state's length");
    if (st.k.size() != m.n_layer) {
        st.k.assign(m.n_layer, {});
        st.v.assign(m.n_layer, {});
    }
    const std::size_t n_tok = tokens.size();
    const std::uint32_t n_embd = m.n_embd;
    const std::uint32_t hd = m.head_dim;
    const bool sub_norms = m.arch != reference_arch::llama;

    // 1. Embeddings (F16 values, widened exactly at load).
    std::vector<std::vector<float>> x(n_tok);
    for (std::size_t t = 0; t < n_tok; ++t) {
        if (tokens[t] < 0 || static_cast<std::uint32_t>(tokens[t]) >= m.n_vocab)
            throw std::invalid_argument("reference_step: token id out of range");
        const float* row = m.token_embd.data() + std::size_t(tokens[t]) * n_embd;
        x[t].assign(row, row + n_embd);
    }

    // 2. Layers.
    for (std::uint32_t l = 0; l < m.n_layer; ++l) {
        reference_layer& L = m.layers[l];
        // 2.1–2.5: norm, q/k/v, RoPE, append K/V (F16) for every token first, so each query
        // sees the keys up to its own position.
        std::vector<std::vector<float>> q(n_tok);
        for (std::size_t t = 0; t < n_tok; ++t) {
            const int pos = pos0 + static_cast<int>(t);
            const std::vector<float> a = reference_rmsnorm(x[t], L.attn_norm, m.rms_eps);
            q[t] = reference_bitlinear(L.wq, a);
            std::vector<float> k = reference_bitlinear(L.wk, a);
            std::vector<float> v = reference_bitlinear(L.wv, a);
            rope(q[t], m.n_head, hd, pos, m);
            rope(k, m.n_head_kv, hd, pos, m);
            for (float e : k)
                st.k[l].push_back(to_f16_round(e));
            for (float e : v)
                st.v[l].push_back(to_f16_round(e));
        }
        for (std::size_t t = 0; t < n_tok; ++t) {
            // 2.6–2.9: attention, sub-norm, output projection, residual.
            const int pos = pos0 + static_cast<int>(t);
            std::vector<float> o = attend(m, st, l, q[t], pos, n_tok == 1 || pos >= decoded_from);
            if (sub_norms)
                o = reference_rmsnorm(o, L.attn_sub_norm, m.rms_eps);
            const std::vector<float> proj = reference_bitlinear(L.wo, o);
            for (std::uint32_t i = 0; i < n_embd; ++i)
                x[t][i] += proj[i];

            // 2.10–2.14: FFN with gate and up on the same input, sub-norm, down, residual.
            const std::vector<float> f = reference_rmsnorm(x[t], L.ffn_norm, m.rms_eps);
            const std::vector<float> g = reference_bitlinear(L.w_gate, f);
            const std::vector<float> u = reference_bitlinear(L.w_up, f);
            std::vector<float> z(m.n_ff);
            for (std::uint32_t i = 0; i < m.n_ff; ++i) {
                if (m.arch == reference_arch::bitnet_b158) {
                    const float r = g[i] > 0.0f ? g[i] : 0.0f;
                    z[i] = (r * r) * u[i];
                } else {
                    z[i] = (g[i] / (1.0f + std::exp(-g[i]))) * u[i];
                }
            }
            if (sub_norms)
                z = reference_rmsnorm(z, L.ffn_sub_norm, m.rms_eps);
            const std::vector<float> down = reference_bitlinear(L.w_down, z);
            for (std::uint32_t i = 0; i < n_embd; ++i)
                x[t][i] += down[i];
        }
    }
    st.n_past += static_cast<std::uint32_t>(n_tok);

    // 3–4. Final norm (rounded to F16), logits against the F16 embedding (or llama's output).
    const std::vector<float> y =
        rounded_f16(reference_rmsnorm(x[n_tok - 1], m.output_norm, m.rms_eps));
    const std::vector<float>& head = m.output.empty() ? m.token_embd : m.output;
    std::vector<float> logits(m.n_vocab);
    for (std::uint32_t v = 0; v < m.n_vocab; ++v) {
        const float* row = head.data() + std::size_t{v} * n_embd;
        double acc = 0.0;
        for (std::uint32_t i = 0; i < n_embd; ++i)
            acc += static_cast<double>(row[i]) * y[i];
        logits[v] = static_cast<float>(acc);
    }
    return logits;
}

} // namespace bitnet::test
