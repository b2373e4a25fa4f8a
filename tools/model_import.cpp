// Float export -> I2_S GGUF. The metadata keys, tensor names and order come from model_synth's
// bitnet_tensor_plan / add_bitnet_metadata, so trained and synthetic files share one layout.
#include "tools/model_import.hpp"

#include "model/gguf/f16.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "tools/model_synth.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace bitnet::tools {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view manifest_format = "bitnet-serve-float-weights";
// Relative difference allowed between the absmean recomputed here (summed in double) and the one
// PyTorch recorded (float32 reduction): a few float ulps.
constexpr double absmean_tolerance = 1e-5;

error bad(const std::string& msg) {
    return error(errc::bad_format, "manifest: " + msg);
}

result<std::string> slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return error(errc::io_error, "cannot open " + path.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        return error(errc::io_error, "cannot read " + path.string());
    return ss.str();
}

struct manifest_tensor {
    std::vector<std::uint64_t> shape;
    std::uint64_t offset = 0;
    std::optional<double> absmean;
};

struct manifest {
    std::string arch, name, data, tokenizer;
    synth_shape shape;
    std::map<std::string, manifest_tensor> tensors;
};

result<std::uint32_t> get_u32(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    if (!v || !v->is_int64() || v->as_int64() <= 0 || v->as_int64() > 0xFFFFFFFF)
        return bad("config." + std::string(key) + " is not a positive integer");
    return static_cast<std::uint32_t>(v->as_int64());
}

result<std::string> get_string(const json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    if (!v || !v->is_string())
        return bad("'" + std::string(key) + "' is not a string");
    return std::string(v->as_string());
}

result<manifest> parse_manifest(std::string_view text) {
    boost::system::error_code ec;
    const json::value root = json::parse(text, ec);
    if (ec || !root.is_object())
        return bad("not a JSON object");
    const json::object& o = root.as_object();
    const auto* format = o.if_contains("format");
    if (!format || !format->is_string() || format->as_string() != manifest_format)
        return bad("'format' is not \"" + std::string(manifest_format) + "\"");
    const auto* version = o.if_contains("version");
    if (!version || !version->is_int64() || version->as_int64() != 1)
        return bad("only version 1 is known");
    manifest m;
    for (auto [key, dst] : {std::pair{"architecture", &m.arch}, std::pair{"name", &m.name},
                            std::pair{"data", &m.data}, std::pair{"tokenizer", &m.tokenizer}}) {
        auto r = get_string(o, key);
        if (!r)
            return r.error();
        *dst = std::move(*r);
    }
    const auto* cfg = o.if_contains("config");
    if (!cfg || !cfg->is_object())
        return bad("no 'config' object");
    const json::object& c = cfg->as_object();
    m.shape.name = m.name;
    synth_shape& sh = m.shape;
    for (auto [key, dst] : {std::pair{"n_embd", &sh.n_embd}, std::pair{"n_layer", &sh.n_layer},
                            std::pair{"n_head", &sh.n_head}, std::pair{"n_head_kv", &sh.n_head_kv},
                            std::pair{"n_ff", &sh.n_ff}, std::pair{"n_vocab", &sh.n_vocab},
                            std::pair{"n_ctx", &sh.n_ctx}}) {
        auto r = get_u32(c, key);
        if (!r)
            return r.error();
        *dst = *r;
    }
    const auto* base = c.if_contains("rope_base");
    if (!base || !base->is_number())
        return bad("config.rope_base is not a number");
    m.shape.rope_base = static_cast<float>(base->to_number<double>());
    if (const auto* eps = c.if_contains("rms_eps");
        eps && (!eps->is_number() || eps->to_number<double>() != 1e-5))
        return error(errc::unsupported, "manifest: only rms_eps 1e-5 is supported");

    const auto* list = o.if_contains("tensors");
    if (!list || !list->is_array())
        return bad("no 'tensors' array");
    for (const json::value& tv : list->as_array()) {
        const json::object* t = tv.if_object();
        if (!t)
            return bad("a 'tensors' entry is not an object");
        auto name_r = get_string(*t, "name");
        if (!name_r)
            return name_r.error();
        const std::string name = std::move(*name_r);
        manifest_tensor mt;
        const auto* shape = t->if_contains("shape");
        if (!shape || !shape->is_array() || shape->as_array().empty())
            return bad("tensor " + name + " has no shape");
        for (const json::value& d : shape->as_array()) {
            if (!d.is_int64() || d.as_int64() <= 0)
                return bad("tensor " + name + " has a bad shape");
            mt.shape.push_back(static_cast<std::uint64_t>(d.as_int64()));
        }
        const auto* off = t->if_contains("offset");
        if (!off || !off->is_int64() || off->as_int64() < 0 || off->as_int64() % 4 != 0)
            return bad("tensor " + name + " has no 4-byte aligned offset");
        mt.offset = static_cast<std::uint64_t>(off->as_int64());
        if (const auto* am = t->if_contains("absmean"); am && am->is_number())
            mt.absmean = am->to_number<double>();
        if (!m.tensors.emplace(name, std::move(mt)).second)
            return bad("tensor " + name + " appears twice");
    }
    return m;
}

std::span<const std::uint8_t> bytes_of(const auto& v) {
    return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(v[0])};
}

} // namespace

namespace {
model::ternary_matrix ternarize_with(std::span<const float> w, std::uint32_t rows,
                                     std::uint32_t cols, float s) {
    model::ternary_matrix t;
    t.rows = rows;
    t.cols = cols;
    t.scale = s;
    t.values.resize(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
        const float q = std::nearbyint(w[i] / s); // round half to even, as torch.round
        t.values[i] = static_cast<std::int8_t>(std::clamp(q, -1.0f, 1.0f));
    }
    return t;
}
} // namespace

model::ternary_matrix ternarize_absmean(std::span<const float> w, std::uint32_t rows,
                                        std::uint32_t cols) {
    double sum = 0.0;
    for (float x : w)
        sum += std::fabs(x);
    const float s = std::max(static_cast<float>(sum / static_cast<double>(w.size())), 1e-5f);
    return ternarize_with(w, rows, cols, s);
}

result<void> import_float_model(const import_options& opt) {
    const fs::path manifest_path(opt.manifest_path);
    const fs::path dir = manifest_path.parent_path();
    auto text = slurp(manifest_path);
    if (!text)
        return text.error();
    auto m = parse_manifest(*text);
    if (!m)
        return m.error();
    auto tok = tokenizer_from_hf_json(opt.tokenizer_path.empty() ? (dir / m->tokenizer).string()
                                                                 : opt.tokenizer_path);
    if (!tok)
        return tok.error();
    if (tok->n_vocab != m->shape.n_vocab)
        return error(errc::invalid_argument, "the tokenizer has " + std::to_string(tok->n_vocab) +
                                                 " tokens but the model's vocabulary is " +
                                                 std::to_string(m->shape.n_vocab));
    auto plan_r = bitnet_tensor_plan(m->arch, m->shape, tok->n_vocab);
    if (!plan_r)
        return plan_r.error();
    const std::vector<tensor_plan>& plan = *plan_r;
    auto blob = slurp(dir / m->data);
    if (!blob)
        return blob.error();

    // Look every tensor up and check its shape before writing anything.
    std::vector<std::span<const float>> data;
    for (const auto& t : plan) {
        const std::string key =
            t.name.substr(0, t.name.size() - std::string_view(".weight").size());
        const auto it = m->tensors.find(key);
        if (it == m->tensors.end())
            return bad("tensor " + key + " is missing");
        const auto& mt = it->second;
        const std::vector<std::uint64_t> want = t.ne1 == 1
                                                    ? std::vector<std::uint64_t>{t.ne0}
                                                    : std::vector<std::uint64_t>{t.ne1, t.ne0};
        if (mt.shape != want)
            return bad("tensor " + key + " does not have the shape the config implies");
        const std::uint64_t n = t.ne0 * t.ne1;
        if (mt.offset + n * 4 > blob->size())
            return bad("tensor " + key + " runs past the end of " + m->data);
        data.emplace_back(reinterpret_cast<const float*>(blob->data() + mt.offset), n);
    }
    if (std::endian::native != std::endian::little)
        return error(errc::unsupported, "the float export is little-endian; this host is not");

    model::gguf_writer w;
    add_bitnet_metadata(w, m->arch, m->shape, *tok, m->name, 40);
    for (const auto& t : plan) {
        const auto type = t.role == tensor_role::embedding ? model::ggml_type::f16
                          : t.role == tensor_role::norm    ? model::ggml_type::f32
                                                           : model::ggml_type::i2_s;
        w.add_tensor(t.name, type, t.ne1 == 1 ? 1 : 2, {t.ne0, t.ne1, 1, 1});
    }
    BITNET_TRY(w.begin(opt.output_path));
    for (std::size_t i = 0; i < plan.size(); ++i) {
        const auto& t = plan[i];
        switch (t.role) {
        case tensor_role::norm: {
            BITNET_TRY(w.write_tensor_data(bytes_of(data[i])));
            break;
        }
        case tensor_role::embedding: {
            std::vector<std::uint16_t> h(data[i].size());
            for (std::size_t j = 0; j < h.size(); ++j)
                h[j] = model::f32_to_f16(data[i][j]);
            BITNET_TRY(w.write_tensor_data(bytes_of(h)));
            break;
        }
        case tensor_role::projection: {
            auto tern = ternarize_absmean(data[i], static_cast<std::uint32_t>(t.ne1),
                                          static_cast<std::uint32_t>(t.ne0));
            const std::string key = t.name.substr(0, t.name.size() - 7);
            if (const auto& recorded = m->tensors.at(key).absmean) {
                if (std::fabs(tern.scale - *recorded) > absmean_tolerance * std::fabs(*recorded))
                    return error(errc::invalid_argument,
                                 "tensor " + key + ": absmean " + std::to_string(tern.scale) +
                                     " differs from the " + std::to_string(*recorded) +
                                     " training recorded");
                // Use training's own float value, so every W / s rounds exactly as it did there.
                if (static_cast<float>(*recorded) != tern.scale)
                    tern = ternarize_with(data[i], tern.rows, tern.cols,
                                          static_cast<float>(*recorded));
            }
            auto packed = model::encode_i2s(tern);
            if (!packed)
                return packed.error();
            BITNET_TRY(w.write_tensor_data(*packed));
            break;
        }
        }
    }
    return w.finish();
}

} // namespace bitnet::tools
