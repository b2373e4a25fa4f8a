// The process's tables that grow with client input or with model versions, in one registry, so
// that `/v1/stats` and `/metrics` show each one's bytes beside its budget without the HTTP side
// knowing the rooms that own them (model/constrain's schema and mask caches register themselves;
// http/ adds the tables it owns). And the count of live objects that belong to one model
// version, so a test can see that a version which went left nothing behind. Thread safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bitnet::memory {

/// One table as it stands now.
struct table_figures {
    std::string name;               ///< e.g. "schema_cache"; the metrics label `table`
    std::uint64_t bytes = 0;        ///< what it holds now
    std::uint64_t budget_bytes = 0; ///< its bound (its config key's value); 0 = bounded otherwise
    std::uint64_t entries = 0;
    std::uint64_t evictions = 0; ///< entries dropped for the budget, so far
};

/// Registers table `name` (a second registration of the name replaces the first); `read` is
/// called under the registry's lock and must not register a table.
void register_table(const std::string& name, std::function<table_figures()> read);
/// Every registered table, by name.
[[nodiscard]] std::vector<table_figures> tables();

/// The kinds of object one model version owns: each is counted while it lives.
enum class live_kind : std::uint8_t {
    version,         ///< a version's batcher (one per loaded or draining version)
    executor,        ///< an executor with its engine (weights view, KV pool)
    text_side,       ///< a text actor with its tokenizer and chat template
    vocabulary,      ///< a vocabulary index of the compiled-schema cache
    compiled_schema, ///< a compiled schema, kept or in use
};
inline constexpr std::size_t live_kinds = 5;

[[nodiscard]] const char* live_kind_name(live_kind k) noexcept;
/// How many objects of kind `k` are alive now.
[[nodiscard]] std::int64_t live_count(live_kind k) noexcept;

/// A member that counts its owner while it lives (copies count too).
template <live_kind K>
class live_counter {
public:
    live_counter() noexcept { add(1); }
    live_counter(const live_counter&) noexcept { add(1); }
    live_counter& operator=(const live_counter&) noexcept = default;
    ~live_counter() { add(-1); }

private:
    static void add(std::int64_t d) noexcept;
};

namespace detail {
std::atomic<std::int64_t>& live_cell(live_kind k) noexcept;
} // namespace detail

template <live_kind K>
void live_counter<K>::add(std::int64_t d) noexcept {
    detail::live_cell(K).fetch_add(d, std::memory_order_relaxed);
}

} // namespace bitnet::memory
