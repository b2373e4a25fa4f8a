#include "actors/supervisor/version_table.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace bitnet::actors {

std::int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

const char* state_name(vstate s) noexcept {
    switch (s) {
    case vstate::loading:
        return "loading";
    case vstate::validating:
        return "validating";
    case vstate::warming:
        return "warming";
    case vstate::ready:
        return "ready";
    case vstate::draining:
        return "draining";
    case vstate::standby:
        return "standby";
    case vstate::unloaded:
        return "unloaded";
    case vstate::failed:
        return "failed";
    }
    return "?";
}

std::uint64_t version_rec::bytes() const noexcept {
    if (ended(state))
        return 0;
    if (has_info)
        return info.weight_bytes + info.kv_pool_bytes;
    return has_spec ? file_bytes + spec.kv_budget_bytes : 0;
}

msg::operation_ticket refuse(std::string why, std::string message, const std::string& alias,
                             std::string op_id) {
    msg::operation_ticket t;
    t.refusal = std::move(why);
    t.message = std::move(message);
    t.alias = alias;
    t.operation_id = std::move(op_id);
    return t;
}

version_rec* version_table::find(std::uint64_t serial) {
    auto it = versions_.find(serial);
    return it == versions_.end() ? nullptr : &it->second;
}

const version_rec* version_table::find(std::uint64_t serial) const {
    auto it = versions_.find(serial);
    return it == versions_.end() ? nullptr : &it->second;
}

alias_rec* version_table::find_alias(const std::string& alias) {
    auto it = aliases_.find(alias);
    return it == aliases_.end() ? nullptr : &it->second;
}

op_rec* version_table::find_op(std::uint64_t op) {
    auto it = ops_.find(op);
    return it == ops_.end() ? nullptr : &it->second;
}

std::uint64_t version_table::add_version(const msg::load_order& order, std::uint64_t op) {
    const auto serial = next_serial_++;
    auto& v = versions_[serial];
    v.serial = serial;
    v.alias = order.alias;
    v.order = order;
    v.op = op;
    auto& a = aliases_[order.alias];
    prune(a);
    a.versions.push_front(serial);
    forget_old_unserved(order.alias);
    return serial;
}

std::uint64_t version_table::begin_op(const std::string& alias, std::string kind,
                                      std::string version, bool counted, bool exclusive) {
    const auto serial = next_op_++;
    op_rec op;
    op.alias = alias;
    op.t0 = sup_clock::now();
    op.counted = counted;
    op.st.id = "op-" + std::to_string(serial);
    op.st.kind = std::move(kind);
    op.st.version = std::move(version);
    op.st.state = op.st.kind == "unload" ? "draining" : "loading";
    op.st.started_ms = unix_ms();
    ops_.emplace(serial, std::move(op));
    auto& a = aliases_[alias];
    if (exclusive)
        a.running_op = serial;
    a.ops.push_front(serial);
    while (a.ops.size() > k_ops_kept) {
        ops_.erase(a.ops.back());
        a.ops.pop_back();
    }
    return serial;
}

std::optional<std::string> version_table::end_op(std::uint64_t serial, const std::string& state,
                                                 std::string failure) {
    auto it = ops_.find(serial);
    if (it == ops_.end() || it->second.st.finished_ms != 0)
        return std::nullopt;
    auto& op = it->second;
    op.st.state = state;
    if (!failure.empty())
        op.st.failure = std::move(failure);
    op.st.finished_ms = unix_ms();
    auto& a = aliases_[op.alias];
    if (a.running_op == serial)
        a.running_op = 0;
    if (!op.counted || op.st.kind == "unload")
        return std::nullopt;
    if (state == "failed")
        return "failed";
    return op.st.kind == "load" ? "success" : "rollback";
}

void version_table::set_state(version_rec& v, vstate s) {
    v.state = s;
    if (v.op == 0)
        return;
    if (auto* op = find_op(v.op); op != nullptr && !ended(s))
        op->st.state = state_name(s);
}

// Ended versions stay listed for a while (what failed and why); the oldest go, leaving room for
// the version about to be added.
void version_table::prune(alias_rec& a) {
    std::size_t n_ended = 0;
    for (auto it = a.versions.begin(); it != a.versions.end();) {
        auto* v = find(*it);
        if (v && ended(v->state) && ++n_ended >= k_ended_kept) {
            versions_.erase(*it);
            it = a.versions.erase(it);
        } else {
            ++it;
        }
    }
}

bool version_table::has_resident(const alias_rec& a) const {
    for (auto s : a.versions)
        if (const auto* v = find(s); v && v->resident())
            return true;
    return false;
}

bool version_table::only_failed(const alias_rec& a) const {
    return !a.served && a.running_op == 0 && !has_resident(a);
}

void version_table::forget_alias(const std::string& alias) {
    auto it = aliases_.find(alias);
    if (it == aliases_.end())
        return;
    for (auto s : it->second.versions)
        versions_.erase(s);
    for (auto o : it->second.ops)
        ops_.erase(o);
    aliases_.erase(it);
}

// Keeps fewer than k_unserved_kept aliases that only failed, besides `keep`: the ones whose last
// operation is oldest go (a client naming a new alias per failed load cannot grow the listings).
void version_table::forget_old_unserved(const std::string& keep) {
    std::vector<std::pair<std::uint64_t, std::string>> unserved; // (last operation, alias)
    for (const auto& [alias, a] : aliases_)
        if (alias != keep && only_failed(a))
            unserved.emplace_back(a.ops.empty() ? 0 : a.ops.front(), alias);
    if (unserved.size() < k_unserved_kept)
        return;
    std::sort(unserved.begin(), unserved.end());
    for (std::size_t i = 0; i + k_unserved_kept <= unserved.size(); ++i) {
        forget_alias(unserved[i].second);
        forgotten_.push_back(unserved[i].second);
    }
}

msg::version_status version_table::version_view(const version_rec& v) {
    msg::version_status s;
    s.version = v.id;
    s.state = state_name(v.state);
    s.failure = v.failure;
    s.path = v.order.path;
    s.file_sha256 = v.sha256;
    s.loaded_at = v.loaded_at;
    if (v.has_info)
        s.info = v.info;
    s.device_fallbacks = v.device_fallbacks;
    return s;
}

msg::model_status version_table::alias_view(const std::string& alias, const alias_rec& a) const {
    msg::model_status m;
    m.alias = alias;
    for (auto s : a.versions)
        if (const auto* v = find(s))
            m.versions.push_back(version_view(*v));
    for (auto s : a.ops)
        if (auto it = ops_.find(s); it != ops_.end())
            m.operations.push_back(it->second.st);
    const version_rec* shown = find(a.active);
    if (!shown && !a.versions.empty())
        shown = find(a.versions.front());
    if (shown) {
        m.version = shown->id;
        m.state = state_name(shown->state);
        m.failure = shown->failure;
        m.path = shown->order.path;
        m.file_sha256 = shown->sha256;
        m.restarts = shown->restarts;
        m.loaded_at = shown->loaded_at;
        if (shown->has_info)
            m.info = shown->info;
        m.device_fallbacks = shown->device_fallbacks;
    }
    if (a.unloading)
        m.state = "draining";
    m.previous_version = a.previous || !a.prev_path.empty() ? a.prev_id : std::string{};
    return m;
}

msg::operation_ticket version_table::ticket(std::uint64_t op) const {
    const auto& o = ops_.at(op);
    msg::operation_ticket t;
    t.operation_id = o.st.id;
    t.alias = o.alias;
    t.version = o.st.version;
    t.state = o.st.state;
    return t;
}

std::optional<msg::operation_ticket> version_table::busy(const std::string& alias) const {
    auto it = aliases_.find(alias);
    if (it == aliases_.end() || it->second.running_op == 0)
        return std::nullopt;
    const auto& op = ops_.at(it->second.running_op).st;
    return refuse("conflict",
                  "operation " + op.id + " (" + op.kind + ") is still running on '" + alias +
                      "'; wait until GET /v1/models/" + alias + " shows it ended",
                  alias, op.id);
}

} // namespace bitnet::actors
