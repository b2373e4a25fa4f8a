// GGUF <-> tokenizer_vocab: the `tokenizer.ggml.*` keys (docs/GGUF-FORMAT.md §5) read through
// gguf_file's typed getters and written with the types llama.cpp's converters use.
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"

namespace bitnet::model {

namespace {

// An optional key: absent is fine, a wrong type is not.
template <class T, class Get>
result<std::optional<T>> optional_key(const gguf_file& f, std::string_view key, Get get) {
    if (!f.find(key))
        return std::optional<T>{};
    auto r = get(key);
    if (!r)
        return r.error();
    return std::optional<T>(static_cast<T>(*r));
}

result<std::optional<std::int32_t>> optional_id(const gguf_file& f, std::string_view key) {
    if (!f.find(key))
        return std::optional<std::int32_t>{};
    auto r = f.get_int(key);
    if (!r)
        return r.error();
    // llama.cpp writes -1 (as u32 0xFFFFFFFF) for "none" in some converters.
    if (*r < 0 || *r == 0xFFFFFFFFll)
        return std::optional<std::int32_t>{};
    if (*r > 0x7FFFFFFF)
        return error(errc::bad_format,
                     std::string(key) + " = " + std::to_string(*r) + " does not fit a token id");
    return std::optional<std::int32_t>(static_cast<std::int32_t>(*r));
}

} // namespace

result<tokenizer_vocab> read_tokenizer_vocab(const gguf_file& f) {
    tokenizer_vocab v;
    auto model = f.get_string("tokenizer.ggml.model");
    if (!model)
        return model.error();
    v.model = std::string(*model);

    auto tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (!tokens)
        return tokens.error();
    v.tokens.assign(tokens->begin(), tokens->end());

    auto pre = optional_key<std::string_view>(f, "tokenizer.ggml.pre",
                                              [&](std::string_view k) { return f.get_string(k); });
    if (!pre)
        return pre.error();
    if (*pre)
        v.pre = std::string(**pre);

    if (f.find("tokenizer.ggml.scores")) {
        auto s = f.get_float_array("tokenizer.ggml.scores");
        if (!s)
            return s.error();
        v.scores = std::move(*s);
    }
    if (f.find("tokenizer.ggml.token_type")) {
        auto t = f.get_int_array("tokenizer.ggml.token_type");
        if (!t)
            return t.error();
        v.token_types.assign(t->begin(), t->end()); // range is checked by tokenizer::create
    }
    if (f.find("tokenizer.ggml.merges")) {
        auto m = f.get_string_array("tokenizer.ggml.merges");
        if (!m)
            return m.error();
        v.merges.assign(m->begin(), m->end());
    }

    const std::pair<const char*, std::optional<std::int32_t>*> ids[] = {
        {"tokenizer.ggml.bos_token_id", &v.bos_id},
        {"tokenizer.ggml.eos_token_id", &v.eos_id},
        {"tokenizer.ggml.eot_token_id", &v.eot_id},
        {"tokenizer.ggml.unknown_token_id", &v.unk_id},
        {"tokenizer.ggml.padding_token_id", &v.pad_id}};
    for (const auto& [key, dst] : ids) {
        auto r = optional_id(f, key);
        if (!r)
            return r.error();
        *dst = *r;
    }

    const std::pair<const char*, std::optional<bool>*> flags[] = {
        {"tokenizer.ggml.add_bos_token", &v.add_bos},
        {"tokenizer.ggml.add_eos_token", &v.add_eos},
        {"tokenizer.ggml.add_space_prefix", &v.add_space_prefix}};
    for (const auto& [key, dst] : flags) {
        auto r = optional_key<bool>(f, key, [&](std::string_view k) { return f.get_bool(k); });
        if (!r)
            return r.error();
        *dst = *r;
    }
    return v;
}

std::vector<std::pair<std::string, gguf_value>> tokenizer_vocab_to_gguf(const tokenizer_vocab& v) {
    std::vector<std::pair<std::string, gguf_value>> kv;
    kv.emplace_back("tokenizer.ggml.model", gguf_value::string(v.model));
    if (v.pre)
        kv.emplace_back("tokenizer.ggml.pre", gguf_value::string(*v.pre));
    kv.emplace_back("tokenizer.ggml.tokens", gguf_value::strings(v.tokens));
    if (!v.scores.empty())
        kv.emplace_back("tokenizer.ggml.scores", gguf_value::f32s(v.scores));
    if (!v.token_types.empty())
        kv.emplace_back("tokenizer.ggml.token_type", gguf_value::i32s(v.token_types));
    if (!v.merges.empty())
        kv.emplace_back("tokenizer.ggml.merges", gguf_value::strings(v.merges));
    const std::pair<const char*, std::optional<std::int32_t>> ids[] = {
        {"tokenizer.ggml.bos_token_id", v.bos_id},
        {"tokenizer.ggml.eos_token_id", v.eos_id},
        {"tokenizer.ggml.eot_token_id", v.eot_id},
        {"tokenizer.ggml.unknown_token_id", v.unk_id},
        {"tokenizer.ggml.padding_token_id", v.pad_id}};
    for (const auto& [key, id] : ids)
        if (id)
            kv.emplace_back(key, gguf_value::u32(static_cast<std::uint32_t>(*id)));
    const std::pair<const char*, std::optional<bool>> flags[] = {
        {"tokenizer.ggml.add_bos_token", v.add_bos},
        {"tokenizer.ggml.add_eos_token", v.add_eos},
        {"tokenizer.ggml.add_space_prefix", v.add_space_prefix}};
    for (const auto& [key, flag] : flags)
        if (flag)
            kv.emplace_back(key, gguf_value::boolean(*flag));
    return kv;
}

} // namespace bitnet::model
