// When a generation ends, and which text may be shown before it does: end-of-generation tokens,
// a token limit, and stop strings that can straddle token boundaries. Works on decoded text
// pieces, so it sits after the detokenizer (vLLM keeps stop strings in the front end too).
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace bitnet::model {

/// Streaming stop-string matcher. Feed it the decoded pieces in order; it returns the text that
/// can be shown now and holds back the longest tail that could still grow into a stop string.
/// On a match it returns the text before the stop string; the stop string itself and anything
/// after it are never emitted.
class stop_string_matcher {
public:
    struct fed {
        std::string emit;      ///< safe to show now
        bool matched = false;  ///< a stop string completed in this piece
        std::size_t which = 0; ///< index of the stop string that matched
    };

    /// invalid_argument when a stop string is empty.
    [[nodiscard]] static result<stop_string_matcher> create(std::vector<std::string> stops);

    /// Appends `piece`. After a match, further pieces are ignored (empty emit, matched stays).
    [[nodiscard]] fed feed(std::string_view piece);
    /// Releases the held-back text (the generation ended for another reason).
    [[nodiscard]] std::string flush();

    [[nodiscard]] std::string_view held() const noexcept { return held_; }
    [[nodiscard]] bool matched() const noexcept { return matched_; }
    /// The stop string that matched ("" before a match): Anthropic's `stop_sequence`.
    [[nodiscard]] std::string_view matched_stop() const noexcept {
        return matched_ ? std::string_view(stops_[which_]) : std::string_view();
    }
    [[nodiscard]] const std::vector<std::string>& stops() const noexcept { return stops_; }

private:
    explicit stop_string_matcher(std::vector<std::string> stops);

    std::vector<std::string> stops_;
    std::string held_;
    bool matched_ = false;
    std::size_t which_ = 0;
};

enum class finish_reason {
    none,        ///< keep generating
    eog,         ///< an end-of-generation token (EOS, EOT, ...) was sampled
    length,      ///< max_tokens reached
    stop_string, ///< a stop string appeared in the text
};

/// "none", "eog", "length", "stop_string".
const char* finish_reason_name(finish_reason r) noexcept;

struct stop_criteria {
    std::vector<std::int32_t> eog_tokens;  ///< the model's EOS/EOT set (plus any stop token ids)
    std::uint32_t max_tokens = 0;          ///< generated-token limit; 0 = no limit here
    std::vector<std::string> stop_strings; ///< non-empty strings
};

/// The stop rules of one sequence, fed one generated token at a time.
class stop_rules {
public:
    struct decision {
        finish_reason reason = finish_reason::none;
        std::string emit; ///< text to show for this token (may be empty while text is held)
        std::size_t stop_index = 0; ///< which stop string matched, for finish_reason::stop_string
    };

    [[nodiscard]] static result<stop_rules> create(const stop_criteria& c);

    /// Called with each generated token and its decoded text. Checks, in order: end-of-generation
    /// token (its text is not shown; held text is released), stop strings, then the token limit
    /// (held text is released). After a finish, further calls return the same reason and no text.
    [[nodiscard]] decision on_token(std::int32_t token, std::string_view piece);

    [[nodiscard]] std::uint32_t n_generated() const noexcept { return n_generated_; }
    [[nodiscard]] finish_reason finished() const noexcept { return finished_; }

private:
    stop_rules(const stop_criteria& c, stop_string_matcher m);

    std::unordered_set<std::int32_t> eog_;
    std::uint32_t max_tokens_ = 0;
    stop_string_matcher matcher_;
    std::uint32_t n_generated_ = 0;
    finish_reason finished_ = finish_reason::none;
};

} // namespace bitnet::model
