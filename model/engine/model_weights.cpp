#include "model/engine/model_weights.hpp"

#include "kernels/f16.hpp"
#include "model/engine/weights/ternary_weights.hpp"
#include "model/engine/weights/tl_layout.hpp"
#include "model/gguf/dequantize.hpp"

#include <cstring>
#include <optional>
#include <set>

namespace bitnet::model {
namespace {

result<std::vector<float>> read_f32_vector(const gguf_tensor* t, std::uint64_t n) {
    if (t == nullptr)
        return std::vector<float>{};
    if (t->n_elements() != n)
        return error(errc::invalid_model, "tensor '" + std::string(t->name) + "' has " +
                                              std::to_string(t->n_elements()) +
                                              " elements, expected " + std::to_string(n));
    std::vector<float> v(n);
    BITNET_TRY(dequantize_row(t->type, t->data, v.data(), static_cast<std::uint32_t>(n)));
    return v;
}

/// The scale of a `bitnet` arch `.scale` tensor (one F32), 1 when absent.
result<float> read_multiplier(const gguf_tensor* t) {
    if (t == nullptr)
        return 1.0f;
    float v = 0.0f;
    BITNET_TRY(dequantize_row(t->type, t->data, &v, 1));
    return v;
}

/// The embedding's bytes as stored, in memory of the engine's own.
result<embedding_table> copy_embedding(const gguf_tensor& t, const model_config& c) {
    auto rb = row_bytes(t.type, c.n_embd);
    if (!rb)
        return rb.error();
    embedding_table e;
    e.type = t.type;
    e.row_bytes = *rb;
    e.data = kernels::aligned_buffer(t.n_bytes);
    std::memcpy(e.data.data(), t.data, t.n_bytes);
    return e;
}

/// The logits matrix [n_vocab][n_embd] as F16: copied from an F16 tensor; other types are widened
/// row by row and narrowed to F16 once, so one logits kernel serves every file (an F32 table
/// loses its low mantissa bits here; documented).
result<kernels::aligned_buffer> logits_to_f16(const gguf_tensor& out, const model_config& c) {
    const std::uint64_t n = std::uint64_t{c.n_vocab} * c.n_embd;
    kernels::aligned_buffer owned(n * sizeof(std::uint16_t));
    if (out.type == ggml_type::f16) {
        std::memcpy(owned.data(), out.data, owned.size());
        return owned;
    }
    auto* dst = owned.as<std::uint16_t>();
    auto rb = row_bytes(out.type, c.n_embd);
    if (!rb)
        return rb.error();
    std::vector<float> row(c.n_embd);
    for (std::uint32_t r = 0; r < c.n_vocab; ++r) {
        BITNET_TRY(dequantize_row(out.type, out.data + r * *rb, row.data(), c.n_embd));
        for (std::uint32_t k = 0; k < c.n_embd; ++k)
            dst[std::uint64_t{r} * c.n_embd + k] = kernels::f32_to_f16(row[k]);
    }
    return owned;
}

class projection_loader {
public:
    projection_loader(const weight_load_options& opt)
        : opt_(opt) {}

    result<projection> load(const gguf_tensor& t, const gguf_tensor* multiplier) {
        projection p;
        p.source_type = t.type;
        auto m = read_multiplier(multiplier);
        if (!m)
            return m.error();
        p.out_multiplier = *m;
        const auto rows = static_cast<std::uint32_t>(t.ne[1]);
        const auto cols = static_cast<std::uint32_t>(t.ne[0]);
        if (cols % 128 != 0)
            return error(errc::unsupported_shape,
                         "tensor '" + std::string(t.name) + "': K = " + std::to_string(cols) +
                             " is not a multiple of 128, which the ternary kernels need");
        formats_.insert(std::string(ggml_type_name(t.type)));
        if (t.type == ggml_type::i2_s) {
            // Used in place: the packed codes, then the f32 scale right after them
            // (docs/GGUF-FORMAT.md §2.2).
            const std::uint64_t n_codes = std::uint64_t{rows} * cols;
            float scale = 0.0f;
            std::memcpy(&scale, t.data + n_codes / 4, sizeof scale);
            p.w = kernels::pack_ternary(t.data, rows, cols, scale, opt_.family);
            return p;
        }
        result<ternary_matrix> decoded = error(errc::unsupported, "");
        if (t.type == ggml_type::tl1 || t.type == ggml_type::tl2) {
            auto table = tl_table(t.type == ggml_type::tl1 ? tl_format::tl1 : tl_format::tl2);
            if (!table)
                return table.error();
            decoded = decode_tl(t, **table);
        } else {
            decoded = decode_float_ternary(t);
        }
        if (!decoded)
            return decoded.error();
        auto bytes = encode_i2s(*decoded);
        if (!bytes)
            return bytes.error();
        p.w = kernels::pack_ternary(bytes->data(), rows, cols, decoded->scale, opt_.family);
        return p;
    }

    [[nodiscard]] std::string formats() const {
        std::string s;
        for (const auto& f : formats_)
            s += (s.empty() ? "" : "+") + f;
        return s;
    }

private:
    /// The built-in table, extended by the operator's kernel_config.ini when one is given.
    result<const tl_param_table*> tl_table(tl_format f) {
        auto& slot = f == tl_format::tl1 ? tl1_ : tl2_;
        if (!slot) {
            tl_param_table table = tl_param_table::builtin();
            if (!opt_.tl_kernel_config.empty()) {
                auto extra = load_kernel_config_ini(opt_.tl_kernel_config, f);
                if (!extra)
                    return extra.error();
                BITNET_TRY(table.merge(*extra));
            }
            slot = std::move(table);
        }
        return &*slot;
    }

    const weight_load_options& opt_;
    std::optional<tl_param_table> tl1_, tl2_;
    std::set<std::string> formats_;
};

/// The logits matrix: the tied embedding, or llama's separate output tensor, as F16; with
/// q8_logits its Q8_0 copy instead, with greedy_screen a Q8_0 screen beside it.
result<void> load_logits(const gguf_file& file, const model_config& c, const model_tensors& t,
                         const weight_load_options& opt, model_weights& w) {
    w.logits_bytes = std::uint64_t{c.n_vocab} * c.n_embd * 2;
    const gguf_tensor* out = c.tied_output || t.output == nullptr ? t.token_embd : t.output;
    if (out == t.token_embd && out->type == ggml_type::f16) {
        w.logits_f16 = w.token_embd.data.as<std::uint16_t>();
    } else {
        auto owned = logits_to_f16(*out, c);
        if (!owned)
            return owned.error();
        w.logits_owned = std::move(*owned);
        w.logits_f16 = w.logits_owned.as<std::uint16_t>();
        w.owned_bytes += w.logits_owned.size();
    }
    file.release_pages(*t.token_embd);
    file.release_pages(*out);

    if (opt.q8_logits) {
        if (c.n_embd % kernels::q8_0_block != 0)
            return error(errc::unsupported_shape,
                         "Q8_0 logits need n_embd to be a multiple of 32, this model has " +
                             std::to_string(c.n_embd));
        w.logits_q8 = kernels::pack_q8_0(w.logits_f16, c.n_vocab, c.n_embd, opt.family);
        w.owned_bytes += w.logits_q8->bytes();
        // The F16 matrix is not read for logits any more: a separate one can go (a tied
        // embedding stays, for its rows).
        if (w.logits_owned.size() > 0) {
            w.owned_bytes -= w.logits_owned.size();
            w.logits_owned = kernels::aligned_buffer{};
            w.logits_f16 = nullptr;
        }
        // Values and their F16 block scales: 34 bytes per 32 values.
        w.logits_bytes = w.logits_q8->bytes();
    } else if (opt.greedy_screen && c.n_embd % kernels::q8_0_block == 0) {
        // Beside the F16 matrix (rows a screen keeps are computed from it): what a greedy-only
        // row reads instead of the whole matrix. logits_bytes stays the F16 matrix's, what any
        // other row reads.
        w.logits_screen = kernels::make_q8_0_screen(w.logits_f16, c.n_vocab, c.n_embd, opt.family);
        w.owned_bytes += w.logits_screen->bytes();
    }
    return {};
}

} // namespace

result<model_weights> load_model_weights(const gguf_file& file, const model_config& c,
                                         const model_tensors& t, const weight_load_options& opt) {
    model_weights w;
    auto embd = copy_embedding(*t.token_embd, c);
    if (!embd)
        return embd.error();
    w.token_embd = std::move(*embd);
    w.owned_bytes += w.token_embd.data.size();
    auto on = read_f32_vector(t.output_norm, c.n_embd);
    if (!on)
        return on.error();
    w.output_norm = std::move(*on);
    if (t.rope_freqs != nullptr) {
        auto rf = read_f32_vector(t.rope_freqs, c.head_dim / 2);
        if (!rf)
            return rf.error();
        w.rope_freqs = std::move(*rf);
    }

    BITNET_TRY(load_logits(file, c, t, opt, w));

    projection_loader loader(opt);
    auto load = [&](const gguf_tensor* tensor, const gguf_tensor* mult,
                    projection& dst) -> result<void> {
        auto p = loader.load(*tensor, mult);
        if (!p)
            return p.error();
        // The repacked copy is all the kernels read: the file's pages can leave memory.
        file.release_pages(*tensor);
        dst = std::move(*p);
        w.owned_bytes += dst.w.data.size();
        w.projection_bytes += dst.w.data.size();
        return {};
    };
    auto vec = [&](const gguf_tensor* tensor, std::uint32_t n,
                   std::vector<float>& dst) -> result<void> {
        auto v = read_f32_vector(tensor, n);
        if (!v)
            return v.error();
        dst = std::move(*v);
        w.owned_bytes += dst.size() * sizeof(float);
        return {};
    };
    w.layers.resize(c.n_layer);
    for (std::uint32_t l = 0; l < c.n_layer; ++l) {
        const layer_tensors& lt = t.layers[l];
        layer_weights& L = w.layers[l];
        BITNET_TRY(vec(lt.attn_norm, c.n_embd, L.attn_norm));
        BITNET_TRY(vec(lt.ffn_norm, c.n_embd, L.ffn_norm));
        if (c.has_sub_norms) {
            BITNET_TRY(vec(lt.attn_sub_norm, c.n_embd_q(), L.attn_sub_norm));
            BITNET_TRY(vec(lt.ffn_sub_norm, c.n_ff, L.ffn_sub_norm));
        }
        BITNET_TRY(load(lt.wq, lt.scale_q, L.wq));
        BITNET_TRY(load(lt.wk, lt.scale_k, L.wk));
        BITNET_TRY(load(lt.wv, lt.scale_v, L.wv));
        BITNET_TRY(load(lt.wo, lt.scale_o, L.wo));
        BITNET_TRY(load(lt.w_gate, lt.scale_gate, L.w_gate));
        BITNET_TRY(load(lt.w_up, lt.scale_up, L.w_up));
        BITNET_TRY(load(lt.w_down, lt.scale_down, L.w_down));
    }
    w.formats = loader.formats();
    return w;
}

void embedding_row(const model_weights& w, std::uint32_t n_embd, std::int32_t id, float* out) {
    const embedding_table& t = w.token_embd;
    const std::uint8_t* row = t.data.data() + static_cast<std::uint64_t>(id) * t.row_bytes;
    if (t.type == ggml_type::f16) {
        const auto* h = reinterpret_cast<const std::uint16_t*>(row);
        for (std::uint32_t k = 0; k < n_embd; ++k)
            out[k] = kernels::f16_to_f32(h[k]);
        return;
    }
    // The embedding's type was checked at load (map_model_tensors), so this cannot fail.
    (void)dequantize_row(t.type, row, out, n_embd);
}

} // namespace bitnet::model
