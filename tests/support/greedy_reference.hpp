// bitnet.cpp's greedy run on tiny-i2_s.gguf (tests/data/bitnetcpp/greedy-reference.json) and the
// argmax/margin rule it was recorded with, shared by the reference and engine cross-checks.
#pragma once

#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::test {

/// The numbers of `"key": [ ... ]` in a small, trusted JSON file (our fixture), in order.
inline std::vector<double> json_numbers(const std::string& text, const std::string& key) {
    const std::size_t at = text.find("\"" + key + "\"");
    REQUIRE_MESSAGE(at != std::string::npos, "fixture lacks key " << key);
    const std::size_t open = text.find('[', at);
    const std::size_t close = text.find(']', open);
    REQUIRE(open != std::string::npos);
    REQUIRE(close != std::string::npos);
    std::vector<double> out;
    const char* p = text.c_str() + open + 1;
    const char* end = text.c_str() + close;
    while (p < end) {
        char* next = nullptr;
        const double v = std::strtod(p, &next);
        if (next == p) { // separator or whitespace
            ++p;
            continue;
        }
        out.push_back(v);
        p = next;
    }
    return out;
}

struct greedy_reference {
    std::vector<std::int32_t> prompt;
    std::vector<std::int32_t> greedy; ///< bitnet.cpp's 64 greedy tokens
    std::vector<double> first_logits; ///< logits of ids 0..7 after the prompt
    std::vector<double> margins;      ///< bitnet.cpp's top-1/top-2 margin at each greedy step
};

inline greedy_reference load_greedy_reference() {
    const auto bytes = read_file(data_path("bitnetcpp/greedy-reference.json"));
    const std::string json(bytes.begin(), bytes.end());
    greedy_reference r;
    for (double v : json_numbers(json, "prompt_ids"))
        r.prompt.push_back(static_cast<std::int32_t>(v));
    for (double v : json_numbers(json, "greedy_ids"))
        r.greedy.push_back(static_cast<std::int32_t>(v));
    r.first_logits = json_numbers(json, "first_logits_ids_0_7");
    r.margins = json_numbers(json, "top1_top2_margins");
    REQUIRE(r.greedy.size() == 64);
    REQUIRE(r.margins.size() == 64);
    REQUIRE(r.first_logits.size() == 8);
    return r;
}

/// Argmax with the lowest id winning ties, and the top-1/top-2 margin.
inline std::pair<std::int32_t, float> argmax_margin(std::span<const float> logits) {
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    float second = -INFINITY;
    for (std::size_t i = 0; i < logits.size(); ++i)
        if (static_cast<std::ptrdiff_t>(i) != best)
            second = std::max(second, logits[i]);
    return {static_cast<std::int32_t>(best), logits[static_cast<std::size_t>(best)] - second};
}

} // namespace bitnet::test
