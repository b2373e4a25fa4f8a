#include "actors/supervisor/device_placements.hpp"

#include <algorithm>

namespace bitnet::actors {

std::vector<std::string> expand_placements(const std::vector<std::string>& configured,
                                           int cuda_devices) {
    std::vector<std::string> out;
    auto add = [&](std::string p) {
        if (std::find(out.begin(), out.end(), p) == out.end())
            out.push_back(std::move(p));
    };
    for (const auto& c : configured) {
        if (c == "auto")
            for (int i = 0; i < cuda_devices; ++i)
                add("cuda:" + std::to_string(i));
        else if (c == "cuda")
            add("cuda:0");
        else
            add(c);
    }
    add("cpu"); // the last resort, listed or not
    return out;
}

std::vector<std::string> placements_for(std::string_view requested,
                                        const std::vector<std::string>& server_list,
                                        int cuda_devices) {
    if (requested.empty() || requested == "auto")
        return server_list.empty() ? expand_placements({"auto"}, cuda_devices) : server_list;
    return expand_placements({std::string(requested)}, cuda_devices);
}

std::optional<std::string> next_placement(const std::vector<std::string>& list,
                                          std::string_view current) {
    if (current == "cpu")
        return std::nullopt;
    auto it = std::find(list.begin(), list.end(), current);
    if (it != list.end() && std::next(it) != list.end())
        return *std::next(it);
    return std::string("cpu");
}

std::string fallback_reason_class(std::string_view message) {
    auto has = [&](std::string_view word) { return message.find(word) != std::string_view::npos; };
    // Order matters: "no CUDA kernels" and "not built" name the build before anything else can.
    if (has("not built") || has("no CUDA kernels") || has("without CUDA"))
        return "not_built";
    if (has("driver"))
        return "no_driver";
    if (has("out of memory") || has("out_of_memory"))
        return "out_of_memory";
    if (has("no CUDA device") || has("no device") || has("no_device") || has("invalid device") ||
        has("device index"))
        return "no_device";
    if (has("format") || has("unsupported"))
        return "format_unsupported";
    return "load_failed";
}

int device_speed_class(std::string_view device) {
    if (device.substr(0, 5) == "cuda:" || device == "cuda")
        return 2;
    if (device.substr(0, 4) == "sim:")
        return 0;
    return 1;
}

bool ranks_before(const replica_rank& a, const replica_rank& b) {
    const int ca = device_speed_class(a.device), cb = device_speed_class(b.device);
    if (ca != cb)
        return ca > cb;
    return a.outstanding_tokens < b.outstanding_tokens;
}

} // namespace bitnet::actors
