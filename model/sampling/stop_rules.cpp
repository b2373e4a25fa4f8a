// Stop rules: EOG tokens, token limit, and stop strings matched across piece boundaries.
#include "model/sampling/stop_rules.hpp"

#include <algorithm>

namespace bitnet::model {

stop_string_matcher::stop_string_matcher(std::vector<std::string> stops)
    : stops_(std::move(stops)) {}

result<stop_string_matcher> stop_string_matcher::create(std::vector<std::string> stops) {
    for (std::size_t i = 0; i < stops.size(); ++i)
        if (stops[i].empty())
            return error(errc::invalid_argument,
                         "stop strings: entry " + std::to_string(i) + " is empty");
    return stop_string_matcher(std::move(stops));
}

stop_string_matcher::fed stop_string_matcher::feed(std::string_view piece) {
    fed out;
    if (matched_) {
        out.matched = true;
        return out;
    }
    // Invariant: the text emitted so far ends with no proper prefix of a stop string other than
    // `held_`, so any match starts inside held_ + piece and a plain search there finds it.
    std::string buf = held_;
    buf.append(piece);
    held_.clear();

    std::size_t best = std::string::npos;
    for (std::size_t i = 0; i < stops_.size(); ++i) {
        const std::size_t at = buf.find(stops_[i]);
        if (at < best) { // earliest start wins; on a tie, the first listed
            best = at;
            out.which = i;
        }
    }
    if (best != std::string::npos) {
        matched_ = true;
        which_ = out.which;
        out.matched = true;
        out.emit = buf.substr(0, best);
        return out;
    }

    // Hold back the longest tail that is a proper prefix of some stop string.
    std::size_t hold = 0;
    for (const auto& s : stops_) {
        for (std::size_t len = std::min(buf.size(), s.size() - 1); len > hold; --len) {
            if (buf.compare(buf.size() - len, len, s, 0, len) == 0) {
                hold = len;
                break;
            }
        }
    }
    held_ = buf.substr(buf.size() - hold);
    buf.resize(buf.size() - hold);
    out.emit = std::move(buf);
    return out;
}

std::string stop_string_matcher::flush() {
    std::string out;
    out.swap(held_);
    return out;
}

const char* finish_reason_name(finish_reason r) noexcept {
    switch (r) {
    case finish_reason::none:
        return "none";
    case finish_reason::eog:
        return "eog";
    case finish_reason::length:
        return "length";
    case finish_reason::stop_string:
        return "stop_string";
    }
    return "?";
}

stop_rules::stop_rules(const stop_criteria& c, stop_string_matcher m)
    : eog_(c.eog_tokens.begin(), c.eog_tokens.end())
    , max_tokens_(c.max_tokens)
    , matcher_(std::move(m)) {}

result<stop_rules> stop_rules::create(const stop_criteria& c) {
    auto m = stop_string_matcher::create(c.stop_strings);
    if (!m)
        return m.error();
    return stop_rules(c, std::move(*m));
}

stop_rules::decision stop_rules::on_token(std::int32_t token, std::string_view piece) {
    decision d;
    if (finished_ != finish_reason::none) {
        d.reason = finished_;
        return d;
    }
    ++n_generated_;
    if (eog_.count(token) != 0) {
        // The EOG token's own text (e.g. "</s>") is not content; what was held is.
        d.emit = matcher_.flush();
        d.reason = finished_ = finish_reason::eog;
        return d;
    }
    auto fed = matcher_.feed(piece);
    d.emit = std::move(fed.emit);
    if (fed.matched) {
        d.stop_index = fed.which;
        d.reason = finished_ = finish_reason::stop_string;
        return d;
    }
    if (max_tokens_ != 0 && n_generated_ >= max_tokens_) {
        d.emit += matcher_.flush();
        d.reason = finished_ = finish_reason::length;
    }
    return d;
}

} // namespace bitnet::model
