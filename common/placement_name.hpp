// The names a device placement may have, checked where text comes in (conf's `devices`, the load
// API's "device" field) by rooms that cannot include the model: "auto", "cpu", "cuda" (= cuda:0),
// "cuda:N" and "sim:N" (the CUDA engine on the simulated grid), N in 0..63. model::parse_placement
// turns an accepted name into a placement; this only says whether and why a name is refused.
#pragma once

#include <string>
#include <string_view>

namespace bitnet {

/// Empty when `name` is a placement name (or "auto"); else why not, in a sentence.
[[nodiscard]] inline std::string placement_name_problem(std::string_view name) {
    if (name == "auto" || name == "cpu" || name == "cuda")
        return {};
    for (std::string_view kind : {std::string_view("cuda:"), std::string_view("sim:")}) {
        if (name.substr(0, kind.size()) != kind)
            continue;
        const std::string_view digits = name.substr(kind.size());
        bool ok = !digits.empty() && digits.size() <= 2;
        for (char c : digits)
            ok = ok && c >= '0' && c <= '9';
        if (ok && (digits.size() == 1 || digits[0] != '0') && std::stoi(std::string(digits)) < 64)
            return {};
        return "'" + std::string(name) + "' needs a device index 0..63 after '" +
               std::string(kind) + "'";
    }
    return "'" + std::string(name) + "' is not auto, cpu, cuda, cuda:N or sim:N";
}

} // namespace bitnet
