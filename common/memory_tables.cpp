#include "common/memory_tables.hpp"

#include <array>
#include <map>
#include <mutex>

namespace bitnet::memory {

namespace {

struct registry {
    std::mutex mu;
    std::map<std::string, std::function<table_figures()>> readers;
};

/// Never destroyed: a cache that registers itself on first use may be first used while the
/// process exits (a compiled schema that forgets its masks as the schema cache is destroyed), and
/// must not find a registry that is already gone.
registry& the_registry() {
    static auto* r = new registry;
    return *r;
}

} // namespace

void register_table(const std::string& name, std::function<table_figures()> read) {
    auto& r = the_registry();
    std::lock_guard lk(r.mu);
    r.readers[name] = std::move(read);
}

std::vector<table_figures> tables() {
    auto& r = the_registry();
    std::lock_guard lk(r.mu);
    std::vector<table_figures> out;
    for (const auto& [name, read] : r.readers) {
        auto f = read();
        f.name = name;
        out.push_back(std::move(f));
    }
    return out;
}

const char* live_kind_name(live_kind k) noexcept {
    switch (k) {
    case live_kind::version:
        return "versions";
    case live_kind::executor:
        return "executors";
    case live_kind::text_side:
        return "text_sides";
    case live_kind::vocabulary:
        return "vocabularies";
    case live_kind::compiled_schema:
        return "compiled_schemas";
    }
    return "unknown";
}

namespace detail {

std::atomic<std::int64_t>& live_cell(live_kind k) noexcept {
    static std::array<std::atomic<std::int64_t>, live_kinds> cells{};
    return cells[static_cast<std::size_t>(k)];
}

} // namespace detail

std::int64_t live_count(live_kind k) noexcept {
    return detail::live_cell(k).load(std::memory_order_relaxed);
}

} // namespace bitnet::memory
