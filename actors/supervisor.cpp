#include "actors/supervisor.hpp"

#include "messages/errors.hpp"
#include "model/gguf/file_digest.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/engine/model_config.hpp"
#include "model/gguf/regular_file.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>

namespace bitnet::actors {
namespace {

using clock = std::chrono::steady_clock;

enum class vstate { loading, validating, warming, ready, draining, standby, unloaded, failed };

const char* state_name(vstate s) {
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

bool ended(vstate s) {
    return s == vstate::unloaded || s == vstate::failed;
}

/// What a loader thread hands over: written on that thread before its "prepared" stage message,
/// read by the supervisor only after that message (the mailbox orders the two).
struct prepared {
    model::file_digest digest;
    bool hashed = false;
    model_spec spec;
};

struct version_rec {
    std::uint64_t serial = 0;
    std::string alias;
    std::string id; ///< the version id; empty until the file is hashed (unless given)
    msg::load_order order;
    vstate state = vstate::loading;
    std::string failure;
    std::string sha256;
    std::uint64_t file_bytes = 0;
    std::shared_ptr<prepared> prep;
    /// Set when nothing will use the load any more (failed, unloaded, shutdown): the loader
    /// thread stops at its next check instead of hashing or reading to the end.
    std::shared_ptr<model::cancel_flag> cancel;
    bool has_spec = false;
    model_spec spec;
    msg::executor_actor executor;
    msg::batcher_actor batcher;
    msg::text_actor text; ///< the version's text side, linked to its batcher
    bool has_info = false;
    msg::executor_info info;
    std::int64_t loaded_at = 0;
    std::uint64_t op = 0;     ///< the running operation that brings this version in, 0 = none
    std::string expect_sha;   ///< rollback by reload: the file must still hash to this
    bool restartable = false; ///< start-up versions restart after failures (bounded)
    bool restarting = false;  ///< a serving version's pair is being restarted
    std::uint32_t restarts = 0;
    bool unload_after_drain = false;
    bool drain_poll = false;
    clock::time_point flipped_at{};
    clock::time_point probation_until{};
    clock::time_point drain_deadline{};
};

struct op_rec {
    msg::operation_status st;
    std::string alias;
    clock::time_point t0;
    bool counted = true; ///< reported through on_swap (operations from the API)
};

struct alias_rec {
    std::uint64_t active = 0;                 ///< the serving version, 0 = none
    std::uint64_t previous = 0;               ///< the resident rollback target, 0 = none
    std::string prev_id, prev_path, prev_sha; ///< the rollback target, remembered when unloaded
    bool prev_warmup = true;
    std::uint64_t running_op = 0;
    std::deque<std::uint64_t> ops;      ///< newest first, the last k_ops_kept
    std::deque<std::uint64_t> versions; ///< newest first, ended ones pruned to k_ended_kept
    bool unloading = false;
    bool served = false; ///< a version of it was ready once
};

// What the listings (/v1/models, /health) keep of the past, so that failed loads, however many,
// cost bounded memory and bounded response sizes (documented in the header).
constexpr std::size_t k_ops_kept = 16;      ///< operations per alias, newest first
constexpr std::size_t k_ended_kept = 8;     ///< failed or unloaded versions per alias
constexpr std::size_t k_unserved_kept = 16; ///< aliases that never served (only failed loads)

struct supervisor_state {
    supervisor_options opt;
    std::map<std::string, alias_rec> aliases;
    std::map<std::uint64_t, version_rec> versions;
    std::map<std::uint64_t, op_rec> ops;
    std::uint64_t next_serial = 1;
    std::uint64_t next_op = 1;
    bool ticking = false;
    bool stopping = false;
    static inline const char* name = "supervisor";
};

using supervisor_pointer = msg::supervisor_actor::stateful_pointer<supervisor_state>;

std::int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string mib(std::uint64_t bytes) {
    return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}

bool receiver_down(const caf::error& e) {
    return e.category() == caf::atom("system") &&
           e.code() == static_cast<std::uint8_t>(caf::sec::request_receiver_down);
}

version_rec* find_version(supervisor_pointer self, std::uint64_t serial) {
    auto it = self->state.versions.find(serial);
    return it == self->state.versions.end() ? nullptr : &it->second;
}

bool resident(const version_rec& v) {
    return !ended(v.state);
}

/// Bytes a version holds or is about to hold: its engine's figures once known, the estimate from
/// the file size and the KV budget while it loads, nothing before the file was read.
std::uint64_t bytes_of(const version_rec& v) {
    if (ended(v.state))
        return 0;
    if (v.has_info)
        return v.info.weight_bytes + v.info.kv_pool_bytes;
    return v.has_spec ? v.file_bytes + v.spec.kv_budget_bytes : 0;
}

// ---- operations ---------------------------------------------------------------------------

std::uint64_t begin_op(supervisor_pointer self, const std::string& alias, std::string kind,
                       std::string version, bool counted = true, bool exclusive = true) {
    auto& st = self->state;
    const auto serial = st.next_op++;
    op_rec op;
    op.alias = alias;
    op.t0 = clock::now();
    op.counted = counted;
    op.st.id = "op-" + std::to_string(serial);
    op.st.kind = std::move(kind);
    op.st.version = std::move(version);
    op.st.state = op.st.kind == "unload" ? "draining" : "loading";
    op.st.started_ms = unix_ms();
    st.ops.emplace(serial, std::move(op));
    auto& a = st.aliases[alias];
    if (exclusive)
        a.running_op = serial;
    a.ops.push_front(serial);
    while (a.ops.size() > k_ops_kept) {
        st.ops.erase(a.ops.back());
        a.ops.pop_back();
    }
    return serial;
}

void end_op(supervisor_pointer self, std::uint64_t serial, const std::string& state,
            std::string failure = {}) {
    auto& st = self->state;
    auto it = st.ops.find(serial);
    if (it == st.ops.end() || it->second.st.finished_ms != 0)
        return;
    auto& op = it->second;
    op.st.state = state;
    if (!failure.empty())
        op.st.failure = std::move(failure);
    op.st.finished_ms = unix_ms();
    auto& a = st.aliases[op.alias];
    if (a.running_op == serial)
        a.running_op = 0;
    if (op.counted && st.opt.on_swap && op.st.kind != "unload") {
        if (state == "failed")
            st.opt.on_swap("failed");
        else
            st.opt.on_swap(op.st.kind == "load" ? "success" : "rollback");
    }
}

/// A version's state, mirrored into the operation that brings it in.
void set_state(supervisor_pointer self, version_rec& v, vstate s) {
    v.state = s;
    if (v.op == 0)
        return;
    if (auto it = self->state.ops.find(v.op); it != self->state.ops.end() && !ended(s))
        it->second.st.state = state_name(s);
}

// ---- stopping versions --------------------------------------------------------------------

void stop_pair(supervisor_pointer self, version_rec& v) {
    if (v.batcher) {
        self->demonitor(v.batcher.address());
        self->send_exit(v.batcher, caf::exit_reason::user_shutdown);
        v.batcher = nullptr;
    }
    if (v.text) {
        self->send_exit(v.text, caf::exit_reason::user_shutdown);
        v.text = nullptr;
    }
    if (v.executor) {
        self->demonitor(v.executor.address());
        self->send_exit(v.executor, caf::exit_reason::user_shutdown);
        v.executor = nullptr;
    }
}

/// Ended versions stay listed for a while (what failed and why); the oldest go, leaving room for
/// the version about to be added. Called only where no loop over the versions is running (it
/// erases records).
void prune(supervisor_pointer self, alias_rec& a) {
    std::size_t n_ended = 0;
    for (auto it = a.versions.begin(); it != a.versions.end();) {
        auto* v = find_version(self, *it);
        if (v && ended(v->state) && ++n_ended >= k_ended_kept) {
            self->state.versions.erase(*it);
            it = a.versions.erase(it);
        } else {
            ++it;
        }
    }
}

bool has_resident(supervisor_pointer self, const alias_rec& a) {
    for (auto s : a.versions)
        if (auto* v = find_version(self, s); v && resident(*v))
            return true;
    return false;
}

/// An alias that never served and has nothing running or resident: only failed loads.
bool only_failed(supervisor_pointer self, const alias_rec& a) {
    return !a.served && a.running_op == 0 && !has_resident(self, a);
}

/// Removes `alias` with its versions and operations. Called only where no loop over the
/// versions or aliases is running.
void forget_alias(supervisor_pointer self, const std::string& alias) {
    auto& st = self->state;
    auto it = st.aliases.find(alias);
    if (it == st.aliases.end())
        return;
    for (auto s : it->second.versions)
        st.versions.erase(s);
    for (auto o : it->second.ops)
        st.ops.erase(o);
    st.aliases.erase(it);
}

/// Keeps fewer than k_unserved_kept aliases that only failed, besides `keep`: the ones whose
/// last operation is oldest go (a client naming a new alias per failed load cannot grow the
/// listings). Called only where no loop over the versions or aliases is running.
void forget_old_unserved(supervisor_pointer self, const std::string& keep) {
    std::vector<std::pair<std::uint64_t, std::string>> unserved; // (last operation, alias)
    for (const auto& [alias, a] : self->state.aliases)
        if (alias != keep && only_failed(self, a))
            unserved.emplace_back(a.ops.empty() ? 0 : a.ops.front(), alias);
    if (unserved.size() < k_unserved_kept)
        return;
    std::sort(unserved.begin(), unserved.end());
    for (std::size_t i = 0; i + k_unserved_kept <= unserved.size(); ++i)
        forget_alias(self, unserved[i].second);
}

void finish_unload_if_done(supervisor_pointer self, const std::string& alias) {
    auto& a = self->state.aliases[alias];
    if (!a.unloading)
        return;
    for (auto s : a.versions)
        if (auto* v = find_version(self, s); v && resident(*v))
            return;
    a.unloading = false;
    if (a.running_op)
        end_op(self, a.running_op, "unloaded");
    if (self->state.opt.on_serving)
        self->state.opt.on_serving(alias, nullptr);
}

/// An ended version keeps only what the listing shows (its spec holds the tokenizer); a loader
/// still working for it stops.
void drop_spec(version_rec& v) {
    v.spec = model_spec{};
    v.prep.reset();
    if (v.cancel)
        v.cancel->store(true);
}

void unload_version(supervisor_pointer self, version_rec& v, std::string note = {}) {
    stop_pair(self, v);
    drop_spec(v);
    if (!ended(v.state))
        v.state = vstate::unloaded;
    if (!note.empty())
        v.failure = std::move(note);
    auto& a = self->state.aliases[v.alias];
    if (a.previous == v.serial)
        a.previous = 0;
    if (a.active == v.serial)
        a.active = 0;
    finish_unload_if_done(self, v.alias);
}

void start_version(supervisor_pointer self, std::uint64_t serial);

/// A version that will not serve: the alias keeps what it serves; the operation ends failed.
/// Start-up versions try again (bounded).
void fail_version(supervisor_pointer self, version_rec& v, std::string why) {
    if (ended(v.state))
        return;
    stop_pair(self, v);
    v.failure = std::move(why);
    auto& st = self->state;
    if ((v.restartable || v.restarting) && !st.stopping && v.restarts < st.opt.max_restarts) {
        ++v.restarts;
        v.has_info = false;
        start_version(self, v.serial);
        return;
    }
    v.state = vstate::failed;
    drop_spec(v);
    auto& a = st.aliases[v.alias];
    if (a.active == v.serial)
        a.active = 0; // a serving version out of restarts: nothing serves the alias
    v.restarting = false;
    if (v.op) {
        end_op(self, v.op, "failed", v.failure);
        v.op = 0;
    }
}

// ---- memory budget ------------------------------------------------------------------------

/// Whether `need` more bytes for version `serial` fit the budget, unloading standby versions
/// (rollback targets) when that makes them fit. Empty = fits; else why not.
std::string make_room(supervisor_pointer self, const version_rec& v, std::uint64_t need,
                      const std::string& what) {
    auto& st = self->state;
    const auto budget = st.opt.memory_budget_bytes;
    if (budget == 0)
        return {};
    std::uint64_t used = 0, standby = 0;
    std::string users;
    for (const auto& [s, o] : st.versions) {
        if (s == v.serial || !resident(o))
            continue;
        used += bytes_of(o);
        if (o.state == vstate::standby)
            standby += bytes_of(o);
        if (bytes_of(o) > 0)
            users += (users.empty() ? "" : ", ") + o.alias + "@" + (o.id.empty() ? "?" : o.id) +
                     " " + mib(bytes_of(o)) + " (" + state_name(o.state) + ")";
    }
    if (used + need <= budget)
        return {};
    if (used - standby + need > budget)
        return "memory budget exceeded: this version needs " + mib(need) + " (" + what +
               "); the budget is " + mib(budget) + " and " + mib(used) + " are in use by " + users +
               ". Unload a model (DELETE /v1/models/{alias}) or raise memory_budget_bytes";
    // Rollback targets are a cache: they give way to a version that is asked for.
    for (auto& [s, o] : st.versions) {
        if (used + need <= budget)
            break;
        if (s != v.serial && o.state == vstate::standby) {
            used -= bytes_of(o);
            unload_version(self, o, "unloaded to make room for " + v.alias);
        }
    }
    return {};
}

// ---- the load pipeline --------------------------------------------------------------------

/// The file of a load order, opened once: only a regular GGUF file (type, size and magic checked
/// before the whole file is hashed), hashed, its metadata verified, and unchanged since it was
/// opened. Runs on the loader thread.
result<std::shared_ptr<const model::regular_file>>
check_model_file(const std::string& path, prepared& prep, const model::cancel_flag* cancel,
                 const std::function<void()>& hashed) {
    auto file = model::regular_file::open(path);
    if (!file)
        return error(file.error().value(), "cannot read the model file: " + file.error().message);
    if (auto magic = model::check_gguf_magic(*file); !magic)
        return error(magic.error().value(), path + ": " + magic.error().message);
    auto d = model::sha256_file(*file, cancel);
    if (!d)
        return error(d.error().value(), "cannot read the model file: " + d.error().message);
    prep.digest = std::move(*d);
    prep.hashed = true;
    hashed();
    auto f = model::gguf_file::open_metadata(path, {}, cancel);
    if (!f)
        return error(f.error().value(), "not a valid GGUF file: " + f.error().to_string());
    const auto violations = model::verify_model(*f);
    if (!violations.empty()) {
        std::string why = "validation failed (" + std::to_string(violations.size()) + " problem" +
                          (violations.size() > 1 ? "s" : "") + "): ";
        for (std::size_t i = 0; i < violations.size() && i < 4; ++i)
            why += (i ? "; " : "") + violations[i];
        return error(errc::invalid_model, why);
    }
    BITNET_TRY(file->check_unchanged()); // the bytes verified are the bytes hashed
    return std::make_shared<const model::regular_file>(std::move(*file));
}

/// The engine is read from the path again, on the executor's thread: it must still be the file
/// that was hashed and verified, or the version's id and checks would describe another file.
void bind_engine_to_file(model_spec& spec, std::shared_ptr<const model::regular_file> file) {
    auto make = std::move(spec.executor.make_engine);
    if (!make)
        return;
    spec.executor.make_engine = [make = std::move(make),
                                 file =
                                     std::move(file)]() -> result<std::unique_ptr<model::engine>> {
        auto e = make();
        if (!e)
            return e;
        BITNET_TRY(file->check_unchanged());
        return e;
    };
}

void spawn_loader(supervisor_pointer self, version_rec& v) {
    auto prep = std::make_shared<prepared>();
    v.prep = prep;
    v.cancel = std::make_shared<model::cancel_flag>(false);
    auto sup = caf::actor_cast<msg::supervisor_actor>(self);
    const auto serial = v.serial;
    auto order = v.order;
    const bool prebuilt = v.has_spec;
    auto spec = v.spec;
    auto make_spec = self->state.opt.make_spec;
    auto cancel = v.cancel;
    // Hashing and verifying read the whole file: a thread of its own, never the scheduler's. One
    // unused spawn argument: CAF 0.17 dereferences a null argument tuple otherwise (UBSan). The
    // thread checks `cancel` between phases and while it reads, so a load nobody waits for any
    // more (failed, unloaded, shutdown) ends within one chunk.
    self->system().spawn<caf::detached>(
        [=](caf::event_based_actor*, int /*unused*/) {
            auto report = [&](const char* stage, std::string failure = {}) {
                caf::anon_send(sup, msg::stage_atom_v, serial, std::string(stage),
                               std::move(failure));
            };
            std::shared_ptr<const model::regular_file> file;
            if (!order.path.empty()) {
                auto checked = check_model_file(order.path, *prep, cancel.get(),
                                                [&] { report("validating"); });
                if (!checked)
                    return report("failed", checked.error().message);
                file = std::move(*checked);
            } else {
                report("validating");
            }
            if (auto c = model::check_cancel(cancel.get(), "the load"); !c)
                return report("failed", c.error().message);
            if (prebuilt) {
                prep->spec = spec;
            } else if (!make_spec) {
                return report("failed", "this server cannot load models at run time");
            } else {
                auto s = make_spec(order);
                if (!s)
                    return report("failed", s.error().to_string());
                prep->spec = std::move(*s);
            }
            if (file) {
                if (auto same = file->check_unchanged(); !same)
                    return report("failed", same.error().message);
                bind_engine_to_file(prep->spec, std::move(file));
            }
            report("prepared");
        },
        0);
}

void spawn_pair(supervisor_pointer self, version_rec& v);

void on_prepared(supervisor_pointer self, version_rec& v) {
    const auto p = std::move(v.prep); // the loader is done with it
    v.spec = std::move(p->spec);
    v.has_spec = true;
    if (p->hashed) {
        v.sha256 = p->digest.sha256_hex;
        v.file_bytes = p->digest.size_bytes;
    }
    if (!v.expect_sha.empty() && v.sha256 != v.expect_sha)
        return fail_version(self, v,
                            "the file " + v.order.path + " changed since version " +
                                v.order.version + " was served (SHA-256 " +
                                v.expect_sha.substr(0, 12) + " then, " + v.sha256.substr(0, 12) +
                                " now)");
    if (v.id.empty())
        v.id = !v.order.version.empty() ? v.order.version
               : !v.sha256.empty()      ? v.sha256.substr(0, 12)
                                        : v.spec.version;
    if (auto it = self->state.ops.find(v.op); it != self->state.ops.end())
        it->second.st.version = v.id;
    if (auto why = make_room(self, v, bytes_of(v),
                             "file " + mib(v.file_bytes) + " + KV " + mib(v.spec.kv_budget_bytes) +
                                 ", estimated");
        !why.empty())
        return fail_version(self, v, why);
    spawn_pair(self, v);
}

void flip(supervisor_pointer self, std::uint64_t serial);

void on_warm(supervisor_pointer self, version_rec& v) {
    auto bo = v.spec.batcher;
    bo.model = v.alias;
    bo.model_version = v.id;
    bo.policy.n_ctx = v.info.n_ctx;
    bo.policy.kv_block_tokens = v.info.kv_block_tokens;
    bo.policy.kv_blocks_total = v.info.kv_blocks_total;
    bo.policy.eog_ids = v.info.eog_ids;
    v.batcher = spawn_batcher(self->system(), bo, v.executor);
    self->monitor(v.batcher);
    v.text = spawn_text_actor(self->system(), v.spec.text, v.batcher);
    flip(self, v.serial);
}

/// Spawns the executor (which loads the engine on its own thread), then checks its real memory
/// figures and warms it up.
void spawn_pair(supervisor_pointer self, version_rec& v) {
    v.executor = spawn_executor(self->system(), v.spec.executor);
    self->monitor(v.executor);
    const auto serial = v.serial;
    const auto exec = v.executor;
    self->request(v.executor, caf::infinite, msg::info_atom_v)
        .then(
            [self, serial, exec](const msg::executor_info& info) {
                auto* ver = find_version(self, serial);
                if (!ver || ver->executor != exec)
                    return;
                ver->info = info;
                ver->has_info = true;
                if (!ver->restarting) {
                    if (auto why = make_room(self, *ver, bytes_of(*ver),
                                             "weights " + mib(info.weight_bytes) + " + KV " +
                                                 mib(info.kv_pool_bytes));
                        !why.empty())
                        return fail_version(self, *ver, why);
                }
                if (ver->restarting || !ver->order.warmup)
                    return on_warm(self, *ver);
                set_state(self, *ver, vstate::warming);
                self->request(exec, std::chrono::minutes(10), msg::warmup_atom_v,
                              self->state.opt.warmup_tokens)
                    .then(
                        [self, serial, exec](const msg::warmup_report& r) {
                            auto* w = find_version(self, serial);
                            if (!w || w->executor != exec)
                                return;
                            if (!r.finite)
                                return fail_version(self, *w, "warm-up failed: " + r.failure);
                            on_warm(self, *w);
                        },
                        [self, serial, exec](const caf::error& e) {
                            auto* w = find_version(self, serial);
                            if (w && w->executor == exec && !receiver_down(e))
                                fail_version(self, *w,
                                             "warm-up failed: " +
                                                 msg::from_caf_error(e).to_string());
                        });
            },
            [self, serial, exec](const caf::error& e) {
                // A dead executor is reported by its down message, which carries the reason.
                auto* w = find_version(self, serial);
                if (w && w->executor == exec && !receiver_down(e))
                    fail_version(self, *w, msg::from_caf_error(e).to_string());
            });
}

void start_version(supervisor_pointer self, std::uint64_t serial) {
    auto* v = find_version(self, serial);
    set_state(self, *v, vstate::loading);
    if (v->restarting || (v->has_spec && v->order.path.empty() && v->restarts > 0))
        return spawn_pair(self, *v);
    spawn_loader(self, *v);
}

/// A new version record for `alias`, started at once.
std::uint64_t new_version(supervisor_pointer self, const msg::load_order& order, std::uint64_t op,
                          const model_spec* prebuilt = nullptr, std::string expect_sha = {}) {
    auto& st = self->state;
    const auto serial = st.next_serial++;
    auto& v = st.versions[serial];
    v.serial = serial;
    v.alias = order.alias;
    v.order = order;
    v.op = op;
    v.expect_sha = std::move(expect_sha);
    if (prebuilt) {
        v.spec = *prebuilt;
        v.has_spec = true;
        v.restartable = true;
    }
    auto& a = st.aliases[order.alias];
    prune(self, a);
    a.versions.push_front(serial);
    forget_old_unserved(self, order.alias);
    start_version(self, serial);
    return serial;
}

// ---- flips, drains, rollbacks -------------------------------------------------------------

void start_ticking(supervisor_pointer self) {
    if (!self->state.ticking) {
        self->state.ticking = true;
        self->send(self, msg::tick_atom_v);
    }
}

/// Points admission at `batcher` and `text` for `alias` (null: removes the alias), with the
/// version's `info` (admission checks requests against its vocabulary and context), then runs
/// `then` once admission has it (every request admission handed to the old batcher is queued there
/// by then).
template <class F>
void route_then(supervisor_pointer self, const std::string& alias, msg::batcher_actor batcher,
                msg::text_actor text, const msg::executor_info& info, F then) {
    auto adm = self->state.opt.admission;
    if (!adm)
        return then();
    self->request(adm, std::chrono::seconds(30), msg::route_atom_v, alias, std::move(batcher),
                  std::move(text), info)
        .then([then](bool) mutable { then(); },
              [then](const caf::error&) mutable {
                  // Admission is gone (shutdown): nothing routes anywhere any more.
                  then();
              });
}

/// Removes `alias` from admission, then runs `then` (as route_then).
template <class F>
void unroute_then(supervisor_pointer self, const std::string& alias, F then) {
    route_then(self, alias, msg::batcher_actor{}, msg::text_actor{}, msg::executor_info{},
               std::move(then));
}

/// The version that was serving `alias` is replaced: it drains, then stays as the rollback
/// target (its predecessor in that role is unloaded).
void retire(supervisor_pointer self, alias_rec& a, std::uint64_t old_serial,
            std::uint64_t new_serial) {
    auto* old = find_version(self, old_serial);
    if (a.previous && a.previous != new_serial && a.previous != old_serial)
        if (auto* p = find_version(self, a.previous)) {
            // No longer the rollback target: unloaded, once what still runs there is done.
            if (p->state == vstate::draining)
                p->unload_after_drain = true;
            else
                unload_version(self, *p);
        }
    a.previous = 0;
    if (!old || ended(old->state))
        return;
    a.previous = old_serial;
    a.prev_id = old->id;
    a.prev_path = old->order.path;
    a.prev_sha = old->sha256;
    a.prev_warmup = old->order.warmup;
    set_state(self, *old, vstate::draining);
    old->drain_deadline = clock::now() + self->state.opt.drain_timeout;
    old->unload_after_drain = false;
    start_ticking(self);
}

void flip(supervisor_pointer self, std::uint64_t serial) {
    auto* v = find_version(self, serial);
    route_then(self, v->alias, v->batcher, v->text, v->info, [self, serial] {
        auto* ver = find_version(self, serial);
        if (!ver || ended(ver->state))
            return;
        auto& a = self->state.aliases[ver->alias];
        const auto old = a.active;
        const auto now = clock::now();
        a.active = serial;
        a.served = true;
        const bool restarted = ver->restarting;
        ver->restarting = false;
        set_state(self, *ver, vstate::ready);
        if (!restarted) {
            ver->loaded_at = unix_ms() / 1000;
            ver->flipped_at = now;
            ver->probation_until = old ? now + self->state.opt.probation : clock::time_point{};
        }
        if (old && old != serial)
            retire(self, a, old, serial);
        if (auto it = self->state.ops.find(ver->op); it != self->state.ops.end()) {
            it->second.st.swap_us =
                std::chrono::duration_cast<std::chrono::microseconds>(now - it->second.t0).count();
            end_op(self, ver->op, "ready");
        }
        ver->op = 0;
        if (self->state.opt.on_serving)
            self->state.opt.on_serving(ver->alias, &ver->spec);
    });
}

/// Back to the resident previous version, as operation `op`.
void flip_back(supervisor_pointer self, const std::string& alias, std::uint64_t op) {
    auto& a = self->state.aliases[alias];
    auto* prev = find_version(self, a.previous);
    prev->op = op;
    flip(self, prev->serial);
}

void drained(supervisor_pointer self, version_rec& v) {
    auto& a = self->state.aliases[v.alias];
    if (v.unload_after_drain || a.previous != v.serial)
        return unload_version(self, v);
    set_state(self, v, vstate::standby);
}

void poll_drains(supervisor_pointer self) {
    bool any = false;
    const auto now = clock::now();
    for (auto& [serial, v] : self->state.versions) {
        if (v.state != vstate::draining)
            continue;
        any = true;
        if (now > v.drain_deadline) {
            unload_version(self, v, "drain timeout: requests still running there were failed");
            continue;
        }
        if (v.drain_poll || !v.batcher)
            continue;
        v.drain_poll = true;
        const auto s = serial;
        self->request(v.batcher, std::chrono::seconds(5), msg::stats_atom_v)
            .then(
                [self, s](const msg::batcher_stats& bs) {
                    auto* ver = find_version(self, s);
                    if (!ver)
                        return;
                    ver->drain_poll = false;
                    if (ver->state == vstate::draining &&
                        bs.running + bs.waiting[0] + bs.waiting[1] + bs.waiting[2] == 0)
                        drained(self, *ver);
                },
                [self, s](const caf::error&) {
                    if (auto* ver = find_version(self, s))
                        ver->drain_poll = false;
                });
    }
    self->state.ticking = any;
    if (any)
        self->delayed_send(self, std::chrono::milliseconds(20), msg::tick_atom_v);
}

/// A child of `v` stopped unasked.
void on_child_down(supervisor_pointer self, version_rec& v, const std::string& why) {
    auto& st = self->state;
    auto& a = st.aliases[v.alias];
    switch (v.state) {
    case vstate::loading:
    case vstate::validating:
    case vstate::warming:
        return fail_version(self, v, why);
    case vstate::draining:
    case vstate::standby:
        return unload_version(self, v, why);
    case vstate::unloaded:
    case vstate::failed:
        return;
    case vstate::ready:
        break;
    }
    if (v.restarting)
        return fail_version(self, v, why);
    const auto now = clock::now();
    auto* prev = find_version(self, a.previous);
    const bool prev_ok = prev && prev->batcher && prev->executor &&
                         (prev->state == vstate::draining || prev->state == vstate::standby);
    if (a.active == v.serial && now < v.probation_until && prev_ok && !a.unloading) {
        // Probation: the new version failed soon after its flip; the previous one takes over.
        const auto in_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - v.flipped_at).count();
        const auto reason = "version " + v.id + " crashed " + std::to_string(in_ms) +
                            " ms after its flip (probation): " + why + "; back to version " +
                            prev->id;
        stop_pair(self, v);
        drop_spec(v);
        v.state = vstate::failed;
        v.failure = reason;
        a.previous = 0;
        a.prev_id.clear();
        a.prev_path.clear();
        a.prev_sha.clear();
        const auto op = begin_op(self, v.alias, "auto_rollback", prev->id, true, false);
        st.ops[op].st.failure = reason;
        const auto prev_serial = prev->serial;
        prev->op = op;
        flip(self, prev_serial);
        // The op ends "ready" in flip; keep the reason on it.
        return;
    }
    // Outside probation: the version restarts in place (bounded), as at start-up.
    if (v.restarts >= st.opt.max_restarts) {
        v.restartable = false;
        return fail_version(self, v, why);
    }
    ++v.restarts;
    v.failure = why;
    stop_pair(self, v);
    v.restarting = true;
    v.has_info = false;
    set_state(self, v, vstate::loading);
    spawn_pair(self, v);
}

// ---- the view ------------------------------------------------------------------------------

msg::version_status version_view(const version_rec& v) {
    msg::version_status s;
    s.version = v.id;
    s.state = state_name(v.state);
    s.failure = v.failure;
    s.path = v.order.path;
    s.file_sha256 = v.sha256;
    s.loaded_at = v.loaded_at;
    if (v.has_info)
        s.info = v.info;
    return s;
}

msg::model_status alias_view(supervisor_pointer self, const std::string& alias,
                             const alias_rec& a) {
    msg::model_status m;
    m.alias = alias;
    for (auto s : a.versions)
        if (auto* v = find_version(self, s))
            m.versions.push_back(version_view(*v));
    for (auto s : a.ops)
        if (auto it = self->state.ops.find(s); it != self->state.ops.end())
            m.operations.push_back(it->second.st);
    const version_rec* shown = find_version(self, a.active);
    if (!shown && !a.versions.empty())
        shown = find_version(self, a.versions.front());
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
    }
    if (a.unloading)
        m.state = "draining";
    m.previous_version = a.previous || !a.prev_path.empty() ? a.prev_id : std::string{};
    return m;
}

msg::operation_ticket refuse(std::string why, std::string message, const std::string& alias,
                             std::string op_id = {}) {
    msg::operation_ticket t;
    t.refusal = std::move(why);
    t.message = std::move(message);
    t.alias = alias;
    t.operation_id = std::move(op_id);
    return t;
}

msg::operation_ticket ticket(supervisor_pointer self, std::uint64_t op) {
    const auto& o = self->state.ops.at(op);
    msg::operation_ticket t;
    t.operation_id = o.st.id;
    t.alias = o.alias;
    t.version = o.st.version;
    t.state = o.st.state;
    return t;
}

/// The refusal when an operation already runs on `alias`, else nothing.
std::optional<msg::operation_ticket> busy(supervisor_pointer self, const std::string& alias) {
    auto it = self->state.aliases.find(alias);
    if (it == self->state.aliases.end() || it->second.running_op == 0)
        return std::nullopt;
    const auto& op = self->state.ops.at(it->second.running_op).st;
    return refuse("conflict",
                  "operation " + op.id + " (" + op.kind + ") is still running on '" + alias +
                      "'; wait until GET /v1/models/" + alias + " shows it ended",
                  alias, op.id);
}

/// DELETE on an alias that only ever failed: nothing to drain, the alias and its history go at
/// once (the ticket's operation has ended "unloaded"; the alias is no longer listed).
msg::operation_ticket clear_unserved(supervisor_pointer self, const std::string& alias) {
    const auto op = begin_op(self, alias, "unload", {});
    end_op(self, op, "unloaded");
    auto t = ticket(self, op);
    forget_alias(self, alias);
    return t;
}

msg::supervisor_actor::behavior_type supervisor_fn(supervisor_pointer self,
                                                   supervisor_options opt) {
    self->state.opt = std::move(opt);
    self->set_down_handler([self](caf::down_msg& dm) {
        for (auto& [serial, v] : self->state.versions) {
            const bool exec = v.executor && v.executor.address() == dm.source;
            const bool batch = v.batcher && v.batcher.address() == dm.source;
            if (!exec && !batch)
                continue;
            if (exec)
                v.executor = nullptr;
            else
                v.batcher = nullptr;
            auto why = std::string(exec ? "executor" : "batcher") + " of '" + v.alias + "' (" +
                       (v.id.empty() ? "new version" : "version " + v.id) +
                       ") stopped: " + msg::from_caf_error(dm.reason).to_string();
            on_child_down(self, v, why);
            return;
        }
    });
    self->set_exit_handler([self](caf::exit_msg& em) {
        // Ordered shutdown: children first, so the actor system can end.
        self->state.stopping = true;
        for (auto& [serial, v] : self->state.versions) {
            if (v.cancel)
                v.cancel->store(true); // a loader thread would hold up the actor system's end
            stop_pair(self, v);
        }
        self->quit(em.reason);
    });
    for (const auto& spec : self->state.opt.models) {
        msg::load_order o;
        o.alias = spec.alias;
        o.path = spec.path;
        o.version = spec.version;
        const auto op = begin_op(self, spec.alias, "load", spec.version, false);
        new_version(self, o, op, &spec);
    }
    for (const auto& order : self->state.opt.initial) {
        const auto op = begin_op(self, order.alias, "load", order.version, false);
        const auto serial = new_version(self, order, op);
        self->state.versions[serial].restartable = true;
    }
    return {
        [self](msg::route_atom, const std::string& alias) -> caf::result<msg::batcher_actor> {
            auto it = self->state.aliases.find(alias);
            if (it == self->state.aliases.end() || it->second.versions.empty())
                return msg::to_caf_error(errc::not_found, "no model '" + alias + "'");
            if (auto* v = find_version(self, it->second.active);
                v && v->state == vstate::ready && v->batcher)
                return v->batcher;
            const auto m = alias_view(self, alias, it->second);
            return msg::to_caf_error(errc::not_found,
                                     "model '" + alias + "' is " + m.state +
                                         (m.failure.empty() ? "" : ": " + m.failure));
        },
        [self](msg::info_atom, const std::string& alias) -> caf::result<msg::executor_info> {
            auto it = self->state.aliases.find(alias);
            auto* v =
                it == self->state.aliases.end() ? nullptr : find_version(self, it->second.active);
            if (!v || v->state != vstate::ready || !v->has_info)
                return msg::to_caf_error(errc::not_found, "model '" + alias + "' is not ready");
            return v->info;
        },
        [self](msg::models_atom) {
            std::vector<msg::model_status> out;
            for (const auto& [alias, a] : self->state.aliases)
                if (!a.versions.empty())
                    out.push_back(alias_view(self, alias, a));
            return out;
        },
        [self](msg::load_atom, msg::load_order order) -> msg::operation_ticket {
            if (order.alias.empty() || order.path.empty())
                return refuse("invalid", "a load needs an alias and a path", order.alias);
            // The OS would read the path only up to the NUL: another file than the one named.
            if (order.path.find('\0') != std::string::npos)
                return refuse("invalid", "path must not contain a NUL byte", order.alias);
            if (!self->state.opt.make_spec)
                return refuse("invalid", "this server cannot load models at run time", order.alias);
            if (auto b = busy(self, order.alias))
                return *b;
            const auto op = begin_op(self, order.alias, "load", order.version);
            new_version(self, order, op);
            return ticket(self, op);
        },
        [self](msg::rollback_atom, const std::string& alias) -> msg::operation_ticket {
            auto it = self->state.aliases.find(alias);
            if (it == self->state.aliases.end() || !has_resident(self, it->second))
                return refuse("not_found", "no model '" + alias + "'", alias);
            if (auto b = busy(self, alias))
                return *b;
            auto& a = it->second;
            auto* prev = find_version(self, a.previous);
            const bool resident_prev =
                prev && prev->batcher && prev->executor &&
                (prev->state == vstate::draining || prev->state == vstate::standby);
            if (!resident_prev && a.prev_path.empty())
                return refuse("invalid", "'" + alias + "' has no previous version to roll back to",
                              alias);
            const auto op = begin_op(self, alias, "rollback", a.prev_id);
            if (resident_prev) {
                flip_back(self, alias, op);
            } else {
                msg::load_order o;
                o.alias = alias;
                o.path = a.prev_path;
                o.version = a.prev_id;
                o.warmup = a.prev_warmup;
                new_version(self, o, op, nullptr, a.prev_sha);
            }
            return ticket(self, op);
        },
        [self](msg::unload_atom, const std::string& alias) -> msg::operation_ticket {
            auto it = self->state.aliases.find(alias);
            if (it != self->state.aliases.end() && only_failed(self, it->second))
                return clear_unserved(self, alias);
            if (it == self->state.aliases.end() || !has_resident(self, it->second))
                return refuse("not_found", "no model '" + alias + "'", alias);
            if (auto b = busy(self, alias))
                return *b;
            auto& a = it->second;
            const auto* act = find_version(self, a.active);
            const auto op = begin_op(self, alias, "unload", act ? act->id : std::string{});
            a.unloading = true;
            unroute_then(self, alias, [self, alias] {
                auto& al = self->state.aliases[alias];
                const auto active = al.active;
                al.active = 0;
                al.previous = 0;
                al.prev_path.clear();
                for (auto s : std::vector<std::uint64_t>(al.versions.begin(), al.versions.end())) {
                    auto* v = find_version(self, s);
                    if (!v || ended(v->state))
                        continue;
                    if (s == active || v->state == vstate::draining) {
                        set_state(self, *v, vstate::draining);
                        v->unload_after_drain = true;
                        v->drain_deadline = clock::now() + self->state.opt.drain_timeout;
                        start_ticking(self);
                    } else {
                        // Standby, or still loading: nothing runs there.
                        if (v->op && v->op != al.running_op)
                            end_op(self, v->op, "failed", "the alias was unloaded");
                        v->op = 0;
                        unload_version(self, *v);
                    }
                }
                finish_unload_if_done(self, alias);
            });
            return ticket(self, op);
        },
        [self](msg::crash_atom, const std::string& alias) {
            auto it = self->state.aliases.find(alias);
            if (it == self->state.aliases.end())
                return;
            if (auto* v = find_version(self, it->second.active); v && v->executor)
                self->send_exit(v->executor, caf::make_error(caf::sec::runtime_error,
                                                             "crash injected by the test hook"));
        },
        [self](msg::stage_atom, std::uint64_t serial, const std::string& stage,
               const std::string& failure) {
            auto* v = find_version(self, serial);
            if (!v || ended(v->state) || !v->prep)
                return;
            if (stage == "validating")
                set_state(self, *v, vstate::validating);
            else if (stage == "failed")
                fail_version(self, *v, failure);
            else if (stage == "prepared")
                on_prepared(self, *v);
        },
        [self](msg::tick_atom) { poll_drains(self); },
    };
}

} // namespace

msg::supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_options opt) {
    return sys.spawn(supervisor_fn, std::move(opt));
}

} // namespace bitnet::actors
