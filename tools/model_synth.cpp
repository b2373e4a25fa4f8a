// Synthetic model writer. Random values come from a counter-based generator (splitmix64 of
// seed, tensor index and position), so every tensor is reproducible independently of the others.
#include "tools/model_synth.hpp"

#include "model/gguf/ggml_type.hpp"
#include "model/gguf/gguf_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace bitnet::tools {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Streams `n_bytes` of a tensor through `fill(buffer, first_byte_index)`.
template <class Fill>
result<void> stream_tensor(model::gguf_writer& w, std::uint64_t n_bytes, Fill fill) {
    constexpr std::uint64_t chunk = 4u << 20;
    std::vector<std::uint8_t> buf;
    for (std::uint64_t at = 0; at < n_bytes; at += chunk) {
        buf.resize(std::min(chunk, n_bytes - at));
        fill(buf, at);
        BITNET_TRY(w.write_tensor_chunk(buf));
    }
    return {};
}

// Ternary code of weight `i` (0 = -1, 1 = 0, 2 = +1): P(±1) = 1/4 each, P(0) = 1/2.
inline std::uint8_t ternary_code(std::uint64_t r, unsigned shift) {
    const auto c = static_cast<std::uint8_t>((r >> shift) & 3u);
    return c == 3 ? 1 : c;
}

// A random F16 value in ±[2^-5, 2^-1): built from bits, so no float->half conversion is needed.
inline std::uint16_t random_f16(std::uint64_t r) {
    const auto sign = static_cast<std::uint16_t>((r & 1u) << 15);
    const auto exponent = static_cast<std::uint16_t>(10 + ((r >> 1) % 4)); // biased 10..13
    const auto mantissa = static_cast<std::uint16_t>((r >> 8) & 0x3ffu);
    return static_cast<std::uint16_t>(sign | (exponent << 10) | mantissa);
}

} // namespace

result<synth_shape> find_shape(const std::string& name) {
    if (name == "tiny")
        return synth_shape{"tiny", 256, 2, 4, 2, 512, 512, 2048, 500000.0f};
    if (name == "small")
        return synth_shape{"small", 768, 12, 12, 4, 2048, 32000, 4096, 500000.0f};
    if (name == "2b4t")
        return synth_shape{"2b4t", 2560, 30, 20, 5, 6912, 128256, 4096, 500000.0f};
    return error(errc::invalid_argument, "unknown shape '" + name + "' (known: tiny, small, 2b4t)");
}

synth_tokenizer byte_level_tokenizer(std::uint32_t n_vocab) {
    // GPT-2's byte -> code point map: printable Latin-1 bytes map to themselves, the other 68
    // bytes to U+0100 onwards in increasing order (docs/GGUF-FORMAT.md §5.1).
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;
    std::uint32_t next = 256;
    for (std::uint32_t b = 0; b < 256; ++b) {
        const bool self = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        const std::uint32_t cp = self ? b : next++;
        std::string s;
        if (cp < 0x80) {
            s.push_back(static_cast<char>(cp));
        } else {
            s.push_back(static_cast<char>(0xc0 | (cp >> 6)));
            s.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        }
        tokens.push_back(std::move(s));
        types.push_back(1);
    }
    const std::uint32_t bos = static_cast<std::uint32_t>(tokens.size());
    for (const char* special : {"<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"}) {
        tokens.emplace_back(special);
        types.push_back(3);
    }
    for (std::uint32_t i = 0; tokens.size() < n_vocab; ++i) {
        tokens.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
        types.push_back(5);
    }
    synth_tokenizer t;
    t.n_vocab = static_cast<std::uint32_t>(tokens.size());
    t.kvs.emplace_back("tokenizer.ggml.model", model::gguf_value::string("gpt2"));
    t.kvs.emplace_back("tokenizer.ggml.pre", model::gguf_value::string("llama-bpe"));
    t.kvs.emplace_back("tokenizer.ggml.tokens", model::gguf_value::strings(std::move(tokens)));
    t.kvs.emplace_back("tokenizer.ggml.token_type", model::gguf_value::i32s(types));
    t.kvs.emplace_back("tokenizer.ggml.merges", model::gguf_value::strings({}));
    t.kvs.emplace_back("tokenizer.ggml.bos_token_id", model::gguf_value::u32(bos));
    t.kvs.emplace_back("tokenizer.ggml.eos_token_id", model::gguf_value::u32(bos + 1));
    t.kvs.emplace_back("tokenizer.ggml.eot_token_id", model::gguf_value::u32(bos + 2));
    t.kvs.emplace_back("tokenizer.ggml.add_bos_token", model::gguf_value::boolean(true));
    return t;
}

result<std::vector<tensor_plan>> bitnet_tensor_plan(const std::string& arch, const synth_shape& s,
                                                    std::uint32_t n_vocab) {
    const bool llama = arch == "llama";
    const bool sub_norms = !llama;
    if (arch != "bitnet-b1.58" && arch != "bitnet-25" && arch != "bitnet" && !llama)
        return error(errc::invalid_argument, "unknown architecture '" + arch +
                                                 "' (bitnet-b1.58, bitnet-25, bitnet, llama)");
    if (n_vocab == 0)
        return error(errc::invalid_argument, "the tokenizer has no tokens");
    if (s.n_head == 0 || s.n_head_kv == 0 || s.n_embd % s.n_head != 0 ||
        s.n_head % s.n_head_kv != 0 || s.n_embd % 128 != 0 || s.n_ff % 128 != 0)
        return error(errc::invalid_argument, "shape '" + s.name + "' is inconsistent");
    const std::uint64_t head_dim = s.n_embd / s.n_head;
    const std::uint64_t kv = head_dim * s.n_head_kv;
    using enum tensor_role;
    std::vector<tensor_plan> plan;
    plan.push_back({"token_embd.weight", embedding, s.n_embd, n_vocab});
    for (std::uint32_t l = 0; l < s.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        plan.push_back({p + "attn_norm.weight", norm, s.n_embd, 1});
        plan.push_back({p + "attn_q.weight", projection, s.n_embd, s.n_embd});
        plan.push_back({p + "attn_k.weight", projection, s.n_embd, kv});
        plan.push_back({p + "attn_v.weight", projection, s.n_embd, kv});
        plan.push_back({p + "attn_output.weight", projection, s.n_embd, s.n_embd});
        if (sub_norms)
            plan.push_back({p + "attn_sub_norm.weight", norm, s.n_embd, 1});
        plan.push_back({p + "ffn_norm.weight", norm, s.n_embd, 1});
        plan.push_back({p + "ffn_gate.weight", projection, s.n_embd, s.n_ff});
        plan.push_back({p + "ffn_up.weight", projection, s.n_embd, s.n_ff});
        plan.push_back({p + "ffn_down.weight", projection, s.n_ff, s.n_embd});
        if (sub_norms)
            plan.push_back({p + "ffn_sub_norm.weight", norm, s.n_ff, 1});
    }
    plan.push_back({"output_norm.weight", norm, s.n_embd, 1});
    if (llama)
        plan.push_back({"output.weight", embedding, s.n_embd, n_vocab});
    return plan;
}

void add_bitnet_metadata(model::gguf_writer& w, const std::string& a, const synth_shape& s,
                         const synth_tokenizer& tokenizer, const std::string& name,
                         std::uint32_t file_type) {
    const auto head_dim = s.n_embd / s.n_head;
    w.add("general.architecture", model::gguf_value::string(a));
    w.add("general.name", model::gguf_value::string(name));
    w.add("general.file_type", model::gguf_value::u32(file_type));
    w.add(a + ".vocab_size", model::gguf_value::u32(tokenizer.n_vocab));
    w.add(a + ".context_length", model::gguf_value::u32(s.n_ctx));
    w.add(a + ".embedding_length", model::gguf_value::u32(s.n_embd));
    w.add(a + ".block_count", model::gguf_value::u32(s.n_layer));
    w.add(a + ".feed_forward_length", model::gguf_value::u32(s.n_ff));
    w.add(a + ".attention.head_count", model::gguf_value::u32(s.n_head));
    w.add(a + ".attention.head_count_kv", model::gguf_value::u32(s.n_head_kv));
    w.add(a + ".rope.dimension_count", model::gguf_value::u32(head_dim));
    w.add(a + ".rope.freq_base", model::gguf_value::f32(s.rope_base));
    w.add(a + ".attention.layer_norm_rms_epsilon", model::gguf_value::f32(1e-5f));
    for (const auto& [k, v] : tokenizer.kvs)
        w.add(k, v);
}

result<void> write_synthetic_model(const synth_options& opt, const std::string& path) {
    const auto& s = opt.shape;
    if (opt.format != "i2_s" && opt.format != "f32")
        return error(errc::invalid_argument, "unknown format '" + opt.format + "' (i2_s, f32)");
    auto plan = bitnet_tensor_plan(opt.arch, s, opt.tokenizer.n_vocab);
    if (!plan)
        return plan.error();
    const auto proj_type = opt.format == "i2_s" ? model::ggml_type::i2_s : model::ggml_type::f32;

    model::gguf_writer w;
    add_bitnet_metadata(w, opt.arch, s, opt.tokenizer, "bitnet-serve synthetic " + s.name,
                        opt.format == "i2_s" ? 40 : 0);
    for (const auto& t : *plan) {
        const auto type = t.role == tensor_role::embedding ? model::ggml_type::f16
                          : t.role == tensor_role::norm    ? model::ggml_type::f32
                                                           : proj_type;
        w.add_tensor(t.name, type, t.ne1 == 1 ? 1 : 2, {t.ne0, t.ne1, 1, 1});
    }
    BITNET_TRY(w.begin(path));

    for (std::size_t ti = 0; ti < plan->size(); ++ti) {
        const auto& t = (*plan)[ti];
        const std::uint64_t key = splitmix64(opt.seed ^ splitmix64(ti + 1));
        const std::uint64_t n = t.ne0 * t.ne1;
        // Unit-variance outputs for unit-RMS inputs: a weight is ±1 with probability 1/2, so
        // the sum over K inputs has variance K/2.
        const float scale = 1.0f / std::sqrt(static_cast<float>(t.ne0) / 2.0f);
        switch (t.role) {
        case tensor_role::norm:
            BITNET_TRY(stream_tensor(w, n * 4, [&](std::vector<std::uint8_t>& b, std::uint64_t) {
                const float one = opt.nan_output_norm && t.name == "output_norm.weight"
                                      ? std::numeric_limits<float>::quiet_NaN()
                                      : 1.0f;
                for (std::size_t i = 0; i < b.size(); i += 4)
                    std::memcpy(&b[i], &one, 4);
            }));
            break;
        case tensor_role::embedding:
            BITNET_TRY(
                stream_tensor(w, n * 2, [key](std::vector<std::uint8_t>& b, std::uint64_t at) {
                    for (std::size_t i = 0; i < b.size(); i += 2) {
                        const std::uint16_t h = random_f16(splitmix64(key + (at + i) / 2));
                        std::memcpy(&b[i], &h, 2);
                    }
                }));
            break;
        case tensor_role::projection:
            if (proj_type == model::ggml_type::i2_s) {
                // Every byte holds four codes; any arrangement of random codes is a random
                // matrix, so bytes are drawn directly. The 32-byte tail starts with the scale.
                const std::uint64_t packed = n / 4;
                BITNET_TRY(stream_tensor(
                    w, packed + 32, [&](std::vector<std::uint8_t>& b, std::uint64_t at) {
                        for (std::size_t i = 0; i < b.size(); ++i) {
                            const std::uint64_t pos = at + i;
                            if (pos >= packed) {
                                b[i] = 0;
                                if (pos < packed + 4)
                                    b[i] =
                                        reinterpret_cast<const std::uint8_t*>(&scale)[pos - packed];
                                continue;
                            }
                            const std::uint64_t r = splitmix64(key + pos / 8);
                            const unsigned base = static_cast<unsigned>(pos % 8) * 8;
                            b[i] = static_cast<std::uint8_t>(
                                ternary_code(r, base) << 6 | ternary_code(r, base + 2) << 4 |
                                ternary_code(r, base + 4) << 2 | ternary_code(r, base + 6));
                        }
                    }));
            } else {
                BITNET_TRY(
                    stream_tensor(w, n * 4, [&](std::vector<std::uint8_t>& b, std::uint64_t at) {
                        for (std::size_t i = 0; i < b.size(); i += 4) {
                            const std::uint64_t e = (at + i) / 4;
                            const std::uint64_t r = splitmix64(key + e / 32);
                            const float v = (static_cast<int>(ternary_code(
                                                 r, static_cast<unsigned>(e % 32) * 2)) -
                                             1) *
                                            scale;
                            std::memcpy(&b[i], &v, 4);
                        }
                    }));
            }
            break;
        }
    }
    return w.finish();
}

} // namespace bitnet::tools
