// tokenizer.json import with Boost.JSON. The conversion follows llama.cpp's convert_hf_to_gguf:
// vocabulary by id, holes as [PAD{id}], added tokens typed by their `special` flag, merges as
// "left right" strings, and a `tokenizer.ggml.pre` chosen from the pre-tokenizer regex.
#include "tools/hf_tokenizer_import.hpp"

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace bitnet::tools {

namespace json = boost::json;
using model::token_type;
using model::tokenizer_vocab;

namespace {

// The Llama-3 split regex as tokenizer.json spells it.
constexpr std::string_view llama3_hf_regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

error bad(std::string msg) {
    return error(errc::bad_format, "tokenizer.json: " + std::move(msg));
}
error unsupported(std::string msg) {
    return error(errc::unsupported, "tokenizer.json: " + std::move(msg));
}

result<json::value> parse_json(std::string_view text, const char* what) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec)
        return error(errc::bad_format, std::string(what) + " is not valid JSON: " + ec.message());
    return v;
}

std::string_view type_of(const json::object& o) {
    const auto* t = o.if_contains("type");
    return t && t->is_string() ? std::string_view(t->as_string()) : std::string_view{};
}

// The `pre` for a byte-level BPE pre_tokenizer, or an error naming what we saw.
result<std::string> choose_pre(const json::value& pre) {
    if (!pre.is_object())
        return unsupported("a byte-level BPE without a pre_tokenizer is not supported");
    const json::object& o = pre.as_object();
    const std::string_view type = type_of(o);
    if (type == "ByteLevel") {
        const auto* use_regex = o.if_contains("use_regex");
        if (!use_regex || (use_regex->is_bool() && use_regex->as_bool()))
            return std::string("gpt2");
        return unsupported("ByteLevel pre_tokenizer without its regex is not supported");
    }
    if (type != "Sequence")
        return unsupported("pre_tokenizer type '" + std::string(type) + "' is not supported");
    const auto* list = o.if_contains("pretokenizers");
    if (!list || !list->is_array())
        return bad("pre_tokenizer Sequence without 'pretokenizers'");
    for (const json::value& p : list->as_array()) {
        if (!p.is_object() || type_of(p.as_object()) != "Split")
            continue;
        const auto* pattern = p.as_object().if_contains("pattern");
        const json::value* regex =
            pattern && pattern->is_object() ? pattern->as_object().if_contains("Regex") : nullptr;
        if (regex && regex->is_string()) {
            if (std::string_view(regex->as_string()) == llama3_hf_regex)
                return std::string("llama-bpe");
            return unsupported("pre_tokenizer split regex '" + std::string(regex->as_string()) +
                               "' is not one we know; pass an explicit pre override");
        }
    }
    return unsupported("pre_tokenizer Sequence without a Split regex is not supported");
}

// A token name in tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> config_token(const json::object& cfg, std::string_view key) {
    const auto* v = cfg.if_contains(key);
    if (!v)
        return std::nullopt;
    if (v->is_string())
        return std::string(v->as_string());
    if (v->is_object())
        if (const auto* c = v->as_object().if_contains("content"); c && c->is_string())
            return std::string(c->as_string());
    return std::nullopt;
}

// Places `text` at `id`, growing the table. Holes stay empty for now.
result<void> put(std::vector<std::optional<std::string>>& by_id, std::int64_t id,
                 std::string text) {
    if (id < 0 || id > 0x7FFFFFFF)
        return error(errc::tokenizer_error,
                     "token '" + text + "' has id " + std::to_string(id) + " out of range");
    if (static_cast<std::size_t>(id) >= by_id.size())
        by_id.resize(static_cast<std::size_t>(id) + 1);
    by_id[id] = std::move(text);
    return {};
}

result<void> import_bpe(const json::object& root, const json::object& model_obj,
                        std::vector<std::optional<std::string>>& by_id, tokenizer_vocab& v) {
    if (const auto* bf = model_obj.if_contains("byte_fallback");
        bf && bf->is_bool() && bf->as_bool())
        return unsupported("BPE with byte_fallback (SentencePiece-style, e.g. Llama 2) is not "
                           "supported; convert from tokenizer.model instead");
    if (const auto* norm = root.if_contains("normalizer"); norm && !norm->is_null())
        return unsupported("a BPE normalizer ('" +
                           std::string(norm->is_object() ? type_of(norm->as_object()) : "?") +
                           "') is not supported");
    const auto* vocab = model_obj.if_contains("vocab");
    if (!vocab || !vocab->is_object())
        return bad("model.vocab is not an object");
    for (const auto& kv : vocab->as_object()) {
        if (!kv.value().is_int64())
            return bad("model.vocab['" + std::string(kv.key()) + "'] is not an integer id");
        BITNET_TRY(put(by_id, kv.value().as_int64(), std::string(kv.key())));
    }
    const auto* merges = model_obj.if_contains("merges");
    if (merges && !merges->is_array())
        return bad("model.merges is not an array");
    if (merges) {
        v.merges.reserve(merges->as_array().size());
        for (const json::value& m : merges->as_array()) {
            if (m.is_string()) {
                v.merges.emplace_back(m.as_string());
            } else if (m.is_array() && m.as_array().size() == 2 && m.as_array()[0].is_string() &&
                       m.as_array()[1].is_string()) {
                // Newer files store pairs; GGUF stores "left right" (byte-level tokens never
                // contain a real space, so the join is unambiguous).
                std::string s(m.as_array()[0].as_string());
                s += ' ';
                s += m.as_array()[1].as_string();
                v.merges.push_back(std::move(s));
            } else {
                return bad("model.merges holds an entry that is neither 'a b' nor [a, b]");
            }
        }
    }
    v.model = "gpt2";
    return {};
}

result<void> import_unigram(const json::object& root, const json::object& model_obj,
                            std::vector<std::optional<std::string>>& by_id,
                            std::vector<float>& scores, tokenizer_vocab& v) {
    const auto* vocab = model_obj.if_contains("vocab");
    if (!vocab || !vocab->is_array())
        return bad("Unigram model.vocab is not an array");
    for (const json::value& e : vocab->as_array()) {
        if (!e.is_array() || e.as_array().size() != 2 || !e.as_array()[0].is_string() ||
            !e.as_array()[1].is_number())
            return bad("Unigram model.vocab entry is not [piece, score]");
        scores.push_back(static_cast<float>(e.as_array()[1].to_number<double>()));
        BITNET_TRY(put(by_id, static_cast<std::int64_t>(by_id.size()),
                       std::string(e.as_array()[0].as_string())));
    }
    if (const auto* unk = model_obj.if_contains("unk_id"); unk && unk->is_int64())
        v.unk_id = static_cast<std::int32_t>(unk->as_int64());
    // Metaspace decides the leading `▁`: prepend_scheme "never" / add_prefix_space false drop it.
    if (const auto* pre = root.if_contains("pre_tokenizer"); pre && pre->is_object()) {
        const json::object& o = pre->as_object();
        if (type_of(o) == "Metaspace") {
            if (const auto* s = o.if_contains("prepend_scheme"); s && s->is_string())
                v.add_space_prefix = std::string_view(s->as_string()) != "never";
            else if (const auto* a = o.if_contains("add_prefix_space"); a && a->is_bool())
                v.add_space_prefix = a->as_bool();
        } else {
            return unsupported("Unigram with pre_tokenizer '" + std::string(type_of(o)) +
                               "' is not supported (only Metaspace)");
        }
    }
    v.model = "llama";
    return {};
}

// Added tokens: their ids may extend the vocabulary or re-type existing entries.
result<void> import_added_tokens(const json::object& root,
                                 std::vector<std::optional<std::string>>& by_id,
                                 std::map<std::int64_t, token_type>& added_types) {
    if (const auto* added = root.if_contains("added_tokens"); added && added->is_array()) {
        for (const json::value& a : added->as_array()) {
            const json::object* o = a.if_object();
            const json::value* id = o ? o->if_contains("id") : nullptr;
            const json::value* content = o ? o->if_contains("content") : nullptr;
            if (!id || !id->is_int64() || !content || !content->is_string())
                return bad("added_tokens entry without an integer 'id' and string 'content'");
            const json::value* special = o->if_contains("special");
            const bool is_special = special && special->is_bool() && special->as_bool();
            BITNET_TRY(put(by_id, id->as_int64(), std::string(content->as_string())));
            added_types[id->as_int64()] =
                is_special ? token_type::control : token_type::user_defined;
        }
    }
    return {};
}

// The GGUF token table (texts and types, SentencePiece scores) from the ids collected.
void fill_token_table(std::vector<std::optional<std::string>>& by_id,
                      const std::map<std::int64_t, token_type>& added_types,
                      std::vector<float>& scores, tokenizer_vocab& v) {
    const bool spm = v.model == "llama";
    v.tokens.reserve(by_id.size());
    v.token_types.reserve(by_id.size());
    for (std::size_t id = 0; id < by_id.size(); ++id) {
        token_type t = token_type::normal;
        if (!by_id[id]) {
            v.tokens.push_back("[PAD" + std::to_string(id) + "]");
            t = token_type::unused;
        } else {
            v.tokens.push_back(std::move(*by_id[id]));
            const std::string& s = v.tokens.back();
            if (spm && s.size() == 6 && s.starts_with("<0x") && s.back() == '>')
                t = token_type::byte;
        }
        if (auto it = added_types.find(static_cast<std::int64_t>(id)); it != added_types.end())
            t = it->second;
        if (v.unk_id && static_cast<std::size_t>(*v.unk_id) == id)
            t = token_type::unknown;
        v.token_types.push_back(static_cast<std::int32_t>(t));
    }
    if (spm) {
        scores.resize(v.tokens.size(), 0.0f);
        v.scores = std::move(scores);
    }
}

// tokenizer_config.json: the special tokens by name, and whether BOS/EOS are added.
result<void> apply_tokenizer_config(std::string_view config_json, tokenizer_vocab& v) {
    auto cfg = parse_json(config_json, "tokenizer_config.json");
    if (!cfg)
        return cfg.error();
    if (!cfg->is_object())
        return error(errc::bad_format, "tokenizer_config.json: the top level is not an object");
    const json::object& c = cfg->as_object();
    auto id_of = [&](std::string_view key, std::optional<std::int32_t>& dst) -> result<void> {
        const auto name = config_token(c, key);
        if (!name)
            return {};
        for (std::size_t i = v.tokens.size(); i-- > 0;) // added tokens are at the end
            if (v.tokens[i] == *name) {
                dst = static_cast<std::int32_t>(i);
                return {};
            }
        return error(errc::tokenizer_error, "tokenizer_config.json: " + std::string(key) + " '" +
                                                *name + "' is not in the vocabulary");
    };
    BITNET_TRY(id_of("bos_token", v.bos_id));
    BITNET_TRY(id_of("eos_token", v.eos_id));
    BITNET_TRY(id_of("pad_token", v.pad_id));
    BITNET_TRY(id_of("unk_token", v.unk_id));
    if (const auto* b = c.if_contains("add_bos_token"); b && b->is_bool())
        v.add_bos = b->as_bool();
    if (const auto* e = c.if_contains("add_eos_token"); e && e->is_bool())
        v.add_eos = e->as_bool();
    return {};
}

} // namespace

result<tokenizer_vocab> import_hf_tokenizer(std::string_view tokenizer_json,
                                            std::optional<std::string_view> config_json,
                                            const hf_import_options& opt) {
    auto parsed = parse_json(tokenizer_json, "tokenizer.json");
    if (!parsed)
        return parsed.error();
    if (!parsed->is_object())
        return bad("the top level is not an object");
    const json::object& root = parsed->as_object();
    const auto* model_v = root.if_contains("model");
    if (!model_v || !model_v->is_object())
        return bad("no 'model' object");
    const json::object& model_obj = model_v->as_object();

    tokenizer_vocab v;
    std::vector<std::optional<std::string>> by_id;
    std::vector<float> scores;
    const std::string_view kind = type_of(model_obj);
    if (kind == "BPE" || (kind.empty() && model_obj.contains("merges"))) {
        BITNET_TRY(import_bpe(root, model_obj, by_id, v));
        if (opt.pre_override) {
            v.pre = *opt.pre_override;
        } else {
            auto pre = choose_pre(root.contains("pre_tokenizer") ? root.at("pre_tokenizer")
                                                                 : json::value(nullptr));
            if (!pre)
                return pre.error();
            v.pre = std::move(*pre);
        }
    } else if (kind == "Unigram") {
        BITNET_TRY(import_unigram(root, model_obj, by_id, scores, v));
    } else {
        return unsupported("model type '" + std::string(kind) +
                           "' is not supported (BPE and Unigram are)");
    }

    std::map<std::int64_t, token_type> added_types;
    BITNET_TRY(import_added_tokens(root, by_id, added_types));
    if (by_id.empty())
        return error(errc::tokenizer_error, "tokenizer.json has an empty vocabulary");

    fill_token_table(by_id, added_types, scores, v);
    if (config_json)
        BITNET_TRY(apply_tokenizer_config(*config_json, v));
    return v;
}

namespace {
result<std::string> slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return error(errc::io_error, "cannot open " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in && !in.eof())
        return error(errc::io_error, "cannot read " + path);
    return ss.str();
}
} // namespace

result<tokenizer_vocab> import_hf_tokenizer_file(const std::string& tokenizer_path,
                                                 const std::string& config_path,
                                                 const hf_import_options& opt) {
    auto text = slurp(tokenizer_path);
    if (!text)
        return text.error();
    std::string cfg_path = config_path;
    if (cfg_path.empty()) {
        const auto beside =
            std::filesystem::path(tokenizer_path).parent_path() / "tokenizer_config.json";
        if (std::filesystem::exists(beside))
            cfg_path = beside.string();
    }
    if (cfg_path.empty())
        return import_hf_tokenizer(*text, std::nullopt, opt);
    auto cfg = slurp(cfg_path);
    if (!cfg)
        return cfg.error();
    return import_hf_tokenizer(*text, std::string_view(*cfg), opt);
}

} // namespace bitnet::tools
