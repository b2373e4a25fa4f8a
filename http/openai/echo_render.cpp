#include "http/openai/echo_render.hpp"

#include "http/api_json.hpp"
#include "http/api_render.hpp"

#include <set>

namespace bitnet::http {

std::array<std::vector<std::string>, 4> completion_echo_columns(const msg::prompt_echo& e) {
    std::array<std::vector<std::string>, 4> cols;
    const std::size_t n = e.tokens.size();
    for (std::size_t i = 0; i < n; ++i) {
        cols[0].push_back(quoted(utf8_or_replacement(i < e.pieces.size() ? e.pieces[i] : "")));
        cols[3].push_back(std::to_string(i < e.text_offsets.size() ? e.text_offsets[i] : 0));
        if (i == 0 || i - 1 >= e.logprobs.size()) {
            cols[1].emplace_back("null");
            cols[2].emplace_back("null");
            continue;
        }
        cols[1].push_back(fixed(e.logprobs[i - 1], 6));
        std::string top = "{";
        std::set<std::string> keys;
        for (std::size_t a = (i - 1) * e.n_top; a < i * e.n_top && a < e.top_logprobs.size(); ++a) {
            auto key = quoted(utf8_or_replacement(a < e.top_pieces.size() ? e.top_pieces[a] : ""));
            if (!keys.insert(key).second)
                continue; // most likely first: the first of a piece is kept
            top += (top.size() > 1 ? "," : "") + key + ":" + fixed(e.top_logprobs[a], 6);
        }
        cols[2].push_back(top + "}");
    }
    return cols;
}

} // namespace bitnet::http
