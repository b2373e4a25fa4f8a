#include "common/cpu_quota.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

#include <sched.h>

namespace bitnet {

namespace {

std::optional<long long> number(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
        s.remove_suffix(1);
    while (!s.empty() && s.front() == ' ')
        s.remove_prefix(1);
    long long v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size())
        return std::nullopt;
    return v;
}

std::optional<int> ceil_ratio(long long quota, long long period) {
    if (quota <= 0 || period <= 0)
        return std::nullopt;
    return static_cast<int>((quota + period - 1) / period);
}

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

/// This process's cgroup path for `controller` ("" = the v2 unified hierarchy), from
/// /proc/self/cgroup; "/" when not found.
std::string cgroup_path(std::string_view controller) {
    std::ifstream f("/proc/self/cgroup");
    std::string line;
    while (std::getline(f, line)) {
        // hierarchy-id:controller-list:path
        const auto a = line.find(':');
        const auto b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos)
            continue;
        std::string_view list(line.data() + a + 1, b - a - 1);
        if (controller.empty()) {
            if (list.empty())
                return line.substr(b + 1);
            continue;
        }
        // "cpu,cpuacct": one of the comma-separated names must be the controller exactly.
        while (!list.empty()) {
            const auto comma = list.find(',');
            if (list.substr(0, comma) == controller)
                return line.substr(b + 1);
            if (comma == std::string_view::npos)
                break;
            list.remove_prefix(comma + 1);
        }
    }
    return "/";
}

} // namespace

std::optional<int> cpus_of_cpu_max(std::string_view text) {
    const auto space = text.find(' ');
    if (space == std::string_view::npos)
        return std::nullopt;
    const auto quota = text.substr(0, space);
    if (quota == "max")
        return std::nullopt;
    const auto q = number(quota);
    const auto p = number(text.substr(space + 1));
    if (!q || !p)
        return std::nullopt;
    return ceil_ratio(*q, *p);
}

std::optional<int> cpus_of_cfs(std::string_view quota_us, std::string_view period_us) {
    const auto q = number(quota_us);
    const auto p = number(period_us);
    if (!q || !p)
        return std::nullopt;
    return ceil_ratio(*q, *p);
}

cpu_budget read_cpu_budget() {
    cpu_budget b;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        b.affinity = std::max(1, CPU_COUNT(&set));
    // cgroup v2: the process's own cgroup, then the mount's root (a container's namespace shows
    // its own cgroup as the root).
    for (const auto& dir : {"/sys/fs/cgroup" + cgroup_path(""), std::string("/sys/fs/cgroup")}) {
        if (auto q = cpus_of_cpu_max(slurp(dir + "/cpu.max"))) {
            b.quota = q;
            return b;
        }
    }
    // cgroup v1: the cpu controller's hierarchy, mounted as cpu or cpu,cpuacct.
    const auto v1 = cgroup_path("cpu");
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"})
        for (const auto& dir : {std::string(mount) + v1, std::string(mount)})
            if (auto q = cpus_of_cfs(slurp(dir + "/cpu.cfs_quota_us"),
                                     slurp(dir + "/cpu.cfs_period_us"))) {
                b.quota = q;
                return b;
            }
    return b;
}

} // namespace bitnet
