// PCRE2-backed pre-tokenizers. The patterns are llama.cpp's (docs/GGUF-FORMAT.md §5.1); PCRE2's
// backtracking gives
// `\s+(?!\S)` the same meaning as in Hugging Face's tokenizers (leave the last space to the next
// word). Match data and JIT stacks are per thread, so concurrent encodes never share them.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "model/tokenizer/tokenizer_pretokenize.hpp"

#include <array>

#include <pcre2.h>

namespace bitnet::model::internal {

const char* const llama3_pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const char* const gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

namespace {

// llama.cpp's DEFAULT (missing `tokenizer.ggml.pre`): four passes.
const std::array<const char*, 4> default_patterns = {
    R"([\p{P}\$\+<=>\^~\|]+)",
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
    R"(\p{N}+)",
    R"([0-9][0-9][0-9])",
};

struct match_state {
    pcre2_match_data* data = nullptr;
    pcre2_match_context* context = nullptr;
    pcre2_jit_stack* jit_stack = nullptr;

    match_state() {
        data = pcre2_match_data_create(1, nullptr);
        context = pcre2_match_context_create(nullptr);
        // A long run of one class (a megabyte of spaces) needs more than the default 32 KiB.
        jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
        if (context && jit_stack)
            pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
    ~match_state() {
        pcre2_jit_stack_free(jit_stack);
        pcre2_match_context_free(context);
        pcre2_match_data_free(data);
    }
    match_state(const match_state&) = delete;
    match_state& operator=(const match_state&) = delete;
};

match_state& thread_match_state() {
    thread_local match_state s;
    return s;
}

std::string pcre2_message(int code) {
    std::array<PCRE2_UCHAR, 256> buf{};
    pcre2_get_error_message(code, buf.data(), buf.size());
    return reinterpret_cast<const char*>(buf.data());
}

} // namespace

result<regex> regex::compile(std::string_view pattern) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    // MATCH_INVALID_UTF: tokenizing arbitrary bytes must not fail; invalid sequences simply never
    // match and fall into the gaps.
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_offset, nullptr);
    if (!code)
        return error(errc::tokenizer_error, "pre-tokenizer regex does not compile at offset " +
                                                std::to_string(err_offset) + ": " +
                                                pcre2_message(err));
    // JIT is an optimisation: without it (e.g. an unsupported CPU) pcre2_match interprets.
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    regex r;
    r.code_ =
        std::shared_ptr<void>(code, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
    return r;
}

result<void> regex::split(const std::vector<std::string_view>& pieces,
                          std::vector<std::string_view>& out) const {
    auto* code = static_cast<pcre2_code*>(code_.get());
    match_state& st = thread_match_state();
    if (!st.data || !st.context)
        return error(errc::internal, "PCRE2 could not allocate match data");
    for (const std::string_view piece : pieces) {
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
        std::size_t pos = 0;     // where the next search starts
        std::size_t emitted = 0; // end of what is already in `out`
        while (pos < piece.size()) {
            const int rc = pcre2_match(code, subject, piece.size(), pos, 0, st.data, st.context);
            if (rc == PCRE2_ERROR_NOMATCH)
                break;
            if (rc < 0)
                return error(errc::tokenizer_error,
                             "pre-tokenizer regex failed: " + pcre2_message(rc));
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
            const std::size_t begin = ov[0];
            std::size_t end = ov[1];
            if (end == begin) {
                // None of our patterns matches empty; be safe and step over one character.
                pos = begin + 1;
                continue;
            }
            if (begin > emitted)
                out.push_back(piece.substr(emitted, begin - emitted));
            out.push_back(piece.substr(begin, end - begin));
            emitted = end;
            pos = end;
        }
        if (emitted < piece.size())
            out.push_back(piece.substr(emitted));
    }
    return {};
}

result<pre_tokenizer> pre_tokenizer::create(const std::optional<std::string>& pre) {
    pre_tokenizer p;
    std::vector<const char*> patterns;
    if (!pre || pre->empty() || *pre == "default") {
        patterns.assign(default_patterns.begin(), default_patterns.end());
    } else if (*pre == "llama-bpe" || *pre == "llama3" || *pre == "llama-v3") {
        patterns.push_back(llama3_pattern);
        p.ignore_merges_ = true;
    } else if (*pre == "gpt2" || *pre == "gpt-2") {
        patterns.push_back(gpt2_pattern);
    } else {
        return error(errc::tokenizer_error,
                     "unsupported pre-tokenizer tokenizer.ggml.pre = '" + *pre +
                         "' (supported: llama-bpe, llama3, llama-v3, gpt2, or absent for default)");
    }
    for (const char* pat : patterns) {
        auto r = regex::compile(pat);
        if (!r)
            return r.error();
        p.regexes_.push_back(std::move(*r));
    }
    return p;
}

result<void> pre_tokenizer::split(std::string_view text, std::vector<std::string_view>& out,
                                  std::vector<std::string_view>& scratch) const {
    if (text.empty())
        return {};
    // Ping-pong between two buffers; the last pass writes straight into `out`.
    std::vector<std::string_view> current{text};
    for (std::size_t i = 0; i < regexes_.size(); ++i) {
        const bool last = i + 1 == regexes_.size();
        std::vector<std::string_view>& dst = last ? out : scratch;
        if (!last)
            dst.clear();
        BITNET_TRY(regexes_[i].split(current, dst));
        if (!last)
            current.swap(scratch);
    }
    return {};
}

} // namespace bitnet::model::internal
