// tokenizer::create (validation and lookup tables), special-token splitting, and the encode/decode
// entry points. The algorithms are in tokenizer_bpe.cpp and tokenizer_spm.cpp.
#include "model/tokenizer/tokenizer.hpp"

#include "model/tokenizer/tokenizer_impl.hpp"
#include "model/tokenizer/unicode.hpp"

#include <algorithm>
#include <cstdio>

namespace bitnet::model {

namespace {

error vocab_error(std::string msg) {
    return error(errc::tokenizer_error, std::move(msg));
}

// Control-token texts that end a turn or the text in the families we meet (llama.cpp's list).
constexpr std::string_view eog_texts[] = {"<|eot_id|>",   "<|end_of_text|>", "<|eom_id|>",
                                          "<|im_end|>",   "<|end|>",         "<end_of_turn>",
                                          "<|endoftext|>"};

std::string spm_piece(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        if (text.substr(i, 3) == "\xE2\x96\x81") {
            out.push_back(' ');
            i += 3;
        } else {
            out.push_back(text[i++]);
        }
    }
    return out;
}

// "<0xNN>" -> NN, or -1.
int parse_byte_token(std::string_view text) {
    if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>')
        return -1;
    int v = 0;
    for (std::size_t i = 3; i < 5; ++i) {
        const char c = text[i];
        v *= 16;
        if (c >= '0' && c <= '9')
            v += c - '0';
        else if (c >= 'A' && c <= 'F')
            v += c - 'A' + 10;
        else if (c >= 'a' && c <= 'f')
            v += c - 'a' + 10;
        else
            return -1;
    }
    return v;
}

using impl = tokenizer::impl;

// The algorithm family named by tokenizer.ggml.model.
result<void> set_kind(impl& m) {
    const tokenizer_vocab& vocab = m.vocab;
    if (vocab.model == "gpt2")
        m.kind = tokenizer_kind::bpe;
    else if (vocab.model == "llama")
        m.kind = tokenizer_kind::spm;
    else
        return vocab_error("unsupported tokenizer.ggml.model '" + vocab.model +
                           "' (supported: gpt2, llama)");

    return {};
}

// Table sizes that agree and special ids inside the vocabulary.
result<void> check_sizes(const tokenizer_vocab& vocab) {
    const std::size_t n = vocab.tokens.size();
    if (n == 0)
        return vocab_error("the vocabulary has no tokens");
    if (n > 0x7FFFFFFF)
        return vocab_error("the vocabulary has more tokens than int32 ids can address");
    if (!vocab.scores.empty() && vocab.scores.size() != n)
        return vocab_error("tokenizer.ggml.scores has " + std::to_string(vocab.scores.size()) +
                           " entries for " + std::to_string(n) + " tokens");
    if (!vocab.token_types.empty() && vocab.token_types.size() != n)
        return vocab_error("tokenizer.ggml.token_type has " +
                           std::to_string(vocab.token_types.size()) + " entries for " +
                           std::to_string(n) + " tokens");

    const std::pair<const char*, std::optional<std::int32_t>> ids[] = {{"bos", vocab.bos_id},
                                                                       {"eos", vocab.eos_id},
                                                                       {"eot", vocab.eot_id},
                                                                       {"unknown", vocab.unk_id},
                                                                       {"padding", vocab.pad_id}};
    for (const auto& [name, id] : ids)
        if (id && (*id < 0 || static_cast<std::size_t>(*id) >= n))
            return vocab_error(std::string(name) + " token id " + std::to_string(*id) +
                               " is out of range for a vocabulary of " + std::to_string(n));
    return {};
}

result<void> read_token_types(impl& m) {
    const tokenizer_vocab& vocab = m.vocab;
    const std::size_t n = m.vocab.tokens.size();
    m.types.resize(n, token_type::normal);
    for (std::size_t i = 0; i < vocab.token_types.size(); ++i) {
        const std::int32_t t = vocab.token_types[i];
        if (t < 0 || t > 6)
            return vocab_error("token " + std::to_string(i) + " has token_type " +
                               std::to_string(t) + " (valid: 0..6)");
        m.types[i] = t == 0 ? token_type::normal : static_cast<token_type>(t);
    }
    return {};
}

// Decoded bytes of every token, so decode is a concatenation.
void build_pieces(impl& m) {
    const tokenizer_vocab& vocab = m.vocab;
    const std::size_t n = m.vocab.tokens.size();
    m.pieces.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::string& text = vocab.tokens[i];
        switch (m.types[i]) {
        case token_type::control:
        case token_type::user_defined:
            m.pieces[i] = text;
            break;
        case token_type::unused:
            break;
        case token_type::unknown:
            // llama.cpp renders SentencePiece's <unk> as U+2585.
            m.pieces[i] = m.kind == tokenizer_kind::spm ? "\xE2\x96\x85" : text;
            break;
        case token_type::byte:
            if (const int b = parse_byte_token(text); b >= 0)
                m.pieces[i] = std::string(1, static_cast<char>(b));
            else
                m.pieces[i] = text;
            break;
        default:
            if (m.kind == tokenizer_kind::spm)
                m.pieces[i] = spm_piece(text);
            else if (!gpt2_decode_bytes(text, m.pieces[i]))
                m.pieces[i] = text;
            break;
        }
    }
}

// Special tokens: user-defined always split out; control and unknown only when asked.
void index_specials(impl& m) {
    const tokenizer_vocab& vocab = m.vocab;
    const std::size_t n = m.vocab.tokens.size();
    for (std::size_t i = 0; i < n; ++i) {
        const token_type t = m.types[i];
        if ((t == token_type::control || t == token_type::user_defined ||
             t == token_type::unknown) &&
            !vocab.tokens[i].empty()) {
            const auto first = static_cast<std::uint8_t>(vocab.tokens[i][0]);
            m.specials_by_first_byte[first].push_back(static_cast<std::int32_t>(i));
            m.special_first_byte[first] = true;
        }
    }
    for (auto& list : m.specials_by_first_byte)
        std::stable_sort(list.begin(), list.end(), [&](std::int32_t a, std::int32_t b) {
            return vocab.tokens[a].size() > vocab.tokens[b].size();
        });
}

// EOT and the end-of-generation set.
void find_eog(impl& m) {
    const tokenizer_vocab& vocab = m.vocab;
    m.eot = vocab.eot_id;
    if (!m.eot)
        if (const std::int32_t t = m.token_to_id.find("<|eot_id|>"); t >= 0)
            m.eot = t;
    if (vocab.eos_id)
        m.eog.push_back(*vocab.eos_id);
    if (m.eot)
        m.eog.push_back(*m.eot);
    for (const std::string_view t : eog_texts)
        if (const std::int32_t id = m.token_to_id.find(t); id >= 0)
            m.eog.push_back(id);
    std::sort(m.eog.begin(), m.eog.end());
    m.eog.erase(std::unique(m.eog.begin(), m.eog.end()), m.eog.end());
}

// Byte-level BPE: the pre-tokenizer, byte stand-ins and the merge ranks.
result<void> set_up_bpe(impl& m) {
    const tokenizer_vocab& vocab = m.vocab;
    auto pre = internal::pre_tokenizer::create(vocab.pre);
    if (!pre)
        return pre.error();
    m.pre = std::move(*pre);
    m.ignore_merges = m.pre.ignore_merges();
    for (int b = 0; b < 256; ++b) {
        m.standins[b] = gpt2_byte_to_utf8(static_cast<std::uint8_t>(b));
        m.byte_token[b] = m.token_to_id.find(gpt2_byte_to_utf8(static_cast<std::uint8_t>(b)));
    }
    m.merges.reserve(vocab.merges.size());
    std::string joined;
    for (std::size_t r = 0; r < vocab.merges.size(); ++r) {
        const std::string_view merge = vocab.merges[r];
        // Split at the first space after position 0 (a token may itself start with one).
        const std::size_t sp = merge.size() > 1 ? merge.find(' ', 1) : std::string_view::npos;
        if (sp == std::string_view::npos)
            return vocab_error("merge " + std::to_string(r) + " '" + std::string(merge) +
                               "' is not of the form 'left right'");
        const std::string_view left = merge.substr(0, sp);
        const std::string_view right = merge.substr(sp + 1);
        const std::int32_t l = m.token_to_id.find(left);
        const std::int32_t rt = m.token_to_id.find(right);
        joined.assign(left);
        joined += right;
        const std::int32_t j = m.token_to_id.find(joined);
        if (l < 0 || rt < 0 || j < 0)
            return vocab_error("merge " + std::to_string(r) + " '" + std::string(merge) +
                               "' uses a token not in the vocabulary ('" +
                               std::string(l < 0    ? left
                                           : rt < 0 ? right
                                                    : joined) +
                               "')");
        m.merges.insert(l, rt, static_cast<std::int32_t>(r), j);
    }
    m.add_bos = vocab.add_bos.value_or(m.ignore_merges); // llama-bpe adds BOS by default
    return {};
}

// SentencePiece: byte fallback tokens and the space prefix.
result<void> set_up_spm(impl& m) {
    const tokenizer_vocab& vocab = m.vocab;
    if (!vocab.merges.empty())
        return vocab_error("a SentencePiece ('llama') vocabulary must not have merges");
    m.add_space_prefix = vocab.add_space_prefix.value_or(true);
    char name[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned>(b));
        std::int32_t t = m.token_to_id.find(name);
        if (t < 0) { // some vocabularies hold raw ASCII instead
            const char c = static_cast<char>(b);
            t = m.token_to_id.find(std::string_view(&c, 1));
        }
        m.byte_fallback[b] = t;
    }
    m.add_bos = vocab.add_bos.value_or(true);
    return {};
}

} // namespace

result<tokenizer> tokenizer::create(tokenizer_vocab in) {
    auto p = std::make_shared<impl>();
    impl& m = *p;
    // Moved in first: the token table points at these strings.
    m.vocab = std::move(in);
    BITNET_TRY(set_kind(m));
    BITNET_TRY(check_sizes(m.vocab));
    BITNET_TRY(read_token_types(m));
    m.token_to_id.build(m.vocab.tokens);
    build_pieces(m);
    index_specials(m);
    find_eog(m);
    BITNET_TRY(m.kind == tokenizer_kind::bpe ? set_up_bpe(m) : set_up_spm(m));
    m.add_eos = m.vocab.add_eos.value_or(false);
    return tokenizer(std::move(p));
}

namespace internal {

void token_table::build(const std::vector<std::string>& tokens) {
    tokens_ = &tokens;
    std::size_t cap = 16;
    while (cap < tokens.size() * 2)
        cap <<= 1;
    slots_.assign(cap, slot{});
    mask_ = cap - 1;
    for (std::size_t id = 0; id < tokens.size(); ++id) {
        const std::uint64_t h = hash_bytes(tokens[id]);
        for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
            slot& s = slots_[i];
            if (s.id < 0 || (s.hash == h && tokens[s.id] == tokens[id])) {
                s = {h, static_cast<std::int32_t>(id)};
                break;
            }
        }
    }
}

} // namespace internal

void tokenizer::impl::split_special(std::string_view text, bool parse_special,
                                    std::vector<internal::fragment>& out) const {
    std::size_t raw_begin = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<std::uint8_t>(text[i]);
        std::int32_t found = -1;
        if (special_first_byte[c]) {
            for (const std::int32_t id : specials_by_first_byte[c]) {
                if (!parse_special && types[id] != token_type::user_defined)
                    continue;
                if (text.substr(i).starts_with(vocab.tokens[id])) {
                    found = id;
                    break; // the list is longest first
                }
            }
        }
        if (found < 0) {
            ++i;
            continue;
        }
        if (i > raw_begin)
            out.push_back({text.substr(raw_begin, i - raw_begin), -1});
        out.push_back({{}, found});
        i += vocab.tokens[found].size();
        raw_begin = i;
    }
    if (raw_begin < text.size())
        out.push_back({text.substr(raw_begin), -1});
}

result<void> tokenizer::encode_into(std::string_view text, const encode_options& opt,
                                    std::vector<std::int32_t>& out) const {
    const impl& m = *impl_;
    if (opt.add_bos) {
        if (!m.vocab.bos_id)
            return vocab_error("add_bos was requested but the vocabulary has no BOS token");
        out.push_back(*m.vocab.bos_id);
    }
    thread_local std::vector<internal::fragment> fragments;
    fragments.clear();
    m.split_special(text, opt.parse_special, fragments);
    // SentencePiece: the space prefix goes on the text at the start and after each special
    // token, as llama.cpp's `is_prev_special` does.
    bool prev_special = true;
    for (const internal::fragment& f : fragments) {
        if (f.token >= 0) {
            out.push_back(f.token);
            prev_special = true;
            continue;
        }
        if (m.kind == tokenizer_kind::bpe)
            BITNET_TRY(m.encode_bpe(f.text, out));
        else
            BITNET_TRY(m.encode_spm(f.text, m.add_space_prefix && prev_special, out));
        prev_special = false;
    }
    if (opt.add_eos) {
        if (!m.vocab.eos_id)
            return vocab_error("add_eos was requested but the vocabulary has no EOS token");
        out.push_back(*m.vocab.eos_id);
    }
    return {};
}

result<std::vector<std::int32_t>> tokenizer::encode(std::string_view text,
                                                    const encode_options& opt) const {
    std::vector<std::int32_t> out;
    out.reserve(text.size() / 3 + 2);
    BITNET_TRY(encode_into(text, opt, out));
    return out;
}

std::string tokenizer::decode(std::span<const std::int32_t> ids, const decode_options& opt) const {
    const impl& m = *impl_;
    std::string out;
    bool strip = opt.strip_leading_space && m.kind == tokenizer_kind::spm && m.add_space_prefix;
    for (const std::int32_t id : ids) {
        std::string_view piece = token_to_piece(id, opt.render_special);
        if (piece.empty())
            continue;
        if (strip && piece.front() == ' ')
            piece.remove_prefix(1);
        strip = false;
        out += piece;
    }
    return out;
}

std::string_view tokenizer::token_to_piece(std::int32_t id, bool render_special) const noexcept {
    const impl& m = *impl_;
    if (id < 0 || static_cast<std::size_t>(id) >= m.pieces.size())
        return {};
    if (!render_special && m.types[id] == token_type::control)
        return {};
    return m.pieces[id];
}

std::string_view tokenizer::token_text(std::int32_t id) const noexcept {
    const auto& t = impl_->vocab.tokens;
    return id < 0 || static_cast<std::size_t>(id) >= t.size() ? std::string_view{} : t[id];
}

std::optional<std::int32_t> tokenizer::find_token(std::string_view text) const noexcept {
    const std::int32_t id = impl_->token_to_id.find(text);
    if (id < 0)
        return std::nullopt;
    return id;
}

token_type tokenizer::type_of(std::int32_t id) const noexcept {
    const auto& t = impl_->types;
    return id < 0 || static_cast<std::size_t>(id) >= t.size() ? token_type::undefined : t[id];
}

std::int32_t tokenizer::n_vocab() const noexcept {
    return static_cast<std::int32_t>(impl_->vocab.tokens.size());
}
tokenizer_kind tokenizer::kind() const noexcept {
    return impl_->kind;
}
std::optional<std::int32_t> tokenizer::bos() const noexcept {
    return impl_->vocab.bos_id;
}
std::optional<std::int32_t> tokenizer::eos() const noexcept {
    return impl_->vocab.eos_id;
}
std::optional<std::int32_t> tokenizer::eot() const noexcept {
    return impl_->eot;
}
std::optional<std::int32_t> tokenizer::unk() const noexcept {
    return impl_->vocab.unk_id;
}
std::optional<std::int32_t> tokenizer::pad() const noexcept {
    return impl_->vocab.pad_id;
}
bool tokenizer::add_bos() const noexcept {
    return impl_->add_bos;
}
bool tokenizer::add_eos() const noexcept {
    return impl_->add_eos;
}

bool tokenizer::is_eog(std::int32_t id) const noexcept {
    return std::binary_search(impl_->eog.begin(), impl_->eog.end(), id);
}
std::span<const std::int32_t> tokenizer::eog_ids() const noexcept {
    return impl_->eog;
}
const tokenizer_vocab& tokenizer::vocab() const noexcept {
    return impl_->vocab;
}

} // namespace bitnet::model
