// The load pipeline of the supervisor (see supervisor.hpp for the lifecycle): a loader thread
// hashes and verifies the file and builds the spec, the memory budget is checked against the
// estimate, the executor loads the engine and is checked against its real figures, a warm-up
// runs, and the batcher and text actor are spawned before the flip. Also the ways out: failing,
// unloading and stopping a version.
#include "actors/supervisor/supervisor_internal.hpp"
#include "messages/errors.hpp"
#include "model/engine/model_config.hpp"
#include "model/gguf/file_digest.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "model/gguf/regular_file.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <vector>

namespace bitnet::actors {
namespace {

/// Whether `need` more bytes for `v` fit the memory budget, unloading standby versions
/// (rollback targets) when that makes them fit. Empty = fits; else why not.
std::string make_room(supervisor_pointer self, const version_rec& v, std::uint64_t need,
                      const std::string& what) {
    std::vector<memory_use> others;
    for (const auto& [s, o] : self->state.table.versions())
        if (s != v.serial && o.resident())
            others.push_back({s, o.bytes(), o.state == vstate::standby,
                              o.alias + "@" + (o.id.empty() ? "?" : o.id), state_name(o.state)});
    auto plan = plan_room(self->state.opt.memory_budget_bytes, others, need, what);
    for (auto s : plan.evict)
        if (auto* o = find_version(self, s))
            unload_version(self, *o, "unloaded to make room for " + v.alias);
    return plan.refusal;
}

} // namespace

/// The file of a load order, opened once: only a regular GGUF file (type, size and magic
/// checked, then its header and metadata parsed and verified, so a file that is not a model is
/// refused before its bytes are read), hashed, and unchanged since it was opened (the bytes
/// verified are the bytes hashed). Runs on the loader thread.
result<std::shared_ptr<const model::regular_file>>
check_model_file(const std::string& path, prepared& prep, const model::cancel_flag* cancel,
                 const std::function<void()>& hashed) {
    auto file = model::regular_file::open(path);
    if (!file)
        return error(file.error().value(), "cannot read the model file: " + file.error().message);
    if (auto magic = model::check_gguf_magic(*file); !magic)
        return error(magic.error().value(), path + ": " + magic.error().message);
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
    auto d = model::sha256_file(*file, cancel);
    if (!d)
        return error(d.error().value(), "cannot read the model file: " + d.error().message);
    prep.digest = std::move(*d);
    prep.hashed = true;
    hashed();
    BITNET_TRY(file->check_unchanged()); // the bytes verified are the bytes hashed
    return std::make_shared<const model::regular_file>(std::move(*file));
}

namespace {

/// The engine is read from the path again, by the executor: its order carries the identity of
/// the file that was hashed and verified, which the executor checks after its load, or the
/// version's id and checks would describe another file.
void bind_order_to_file(model_spec& spec, const model::regular_file& file,
                        const model::file_digest& digest) {
    spec.executor.file = file.identity();
    spec.executor.file_sha256 = digest.sha256_hex;
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
                caf::anon_send(sup, msg::stage_atom_v,
                               msg::load_progress{serial, std::string(stage), std::move(failure)});
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
                bind_order_to_file(prep->spec, *file, prep->digest);
            }
            report("prepared");
        },
        0);
}

void on_warm(supervisor_pointer self, version_rec& v) {
    auto bo = v.spec.batcher;
    bo.model = v.alias;
    bo.model_version = v.id;
    bo.policy.n_ctx = v.info.n_ctx;
    bo.policy.kv_block_tokens = v.info.kv_block_tokens;
    bo.policy.kv_blocks_total = v.info.kv_blocks_total;
    bo.policy.eog_ids = v.info.eog_ids;
    bo.watchdog = caf::actor_cast<caf::actor>(self);
    // Auto tool calls are decoded under the call syntax of the template that renders the tools.
    if (v.spec.text.formatter)
        bo.tool_syntax = static_cast<std::uint8_t>(v.spec.text.formatter->tool_syntax());
    v.batcher = spawn_batcher(self->system(), bo, v.executor, v.spec.text.tokenizer);
    self->monitor(v.batcher);
    v.text = spawn_text_actor(self->system(), v.spec.text, v.batcher);
    flip(self, v.serial);
}

} // namespace

bool receiver_down(const caf::error& e) {
    return e.category() == caf::atom("system") &&
           e.code() == static_cast<std::uint8_t>(caf::sec::request_receiver_down);
}

/// An ended version keeps only what the listing shows (its spec holds the tokenizer); a loader
/// still working for it stops.
void drop_spec(version_rec& v) {
    v.spec = model_spec{};
    v.prep.reset();
    if (v.cancel)
        v.cancel->store(true);
}

void end_op(supervisor_pointer self, std::uint64_t op, const std::string& state,
            std::string failure) {
    auto counted = self->state.table.end_op(op, state, std::move(failure));
    if (counted && self->state.opt.on_swap)
        self->state.opt.on_swap(*counted);
}

void stop_pair(supervisor_pointer self, version_rec& v) {
    if (v.batcher) {
        self->demonitor(v.batcher.address());
        // At shutdown the node goes away as a whole, and requests other nodes placed here move on
        // when their relays see it go; any other stop (a crash's restart, an unload, a rollback's
        // loser) tells the batcher's requests so they can be retried (actors/batcher/batcher.cpp).
        if (self->state.stopping)
            self->send_exit(v.batcher, caf::exit_reason::user_shutdown);
        else
            self->send_exit(v.batcher, msg::to_caf_error(errc::cancelled, "its version stopped"));
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
    // A step still running (stuck, or just long) stops at its next schema check, so the exit
    // above is taken soon and the thread never lingers behind a replaced version.
    if (v.exec_cancel)
        v.exec_cancel->cancelled = true;
}

void finish_unload_if_done(supervisor_pointer self, const std::string& alias) {
    auto& a = self->state.table.alias(alias);
    if (!a.unloading)
        return;
    for (auto s : a.versions)
        if (auto* v = find_version(self, s); v && v->resident())
            return;
    a.unloading = false;
    if (a.running_op)
        end_op(self, a.running_op, "unloaded");
    if (self->state.opt.on_serving)
        self->state.opt.on_serving(alias, nullptr);
}

void unload_version(supervisor_pointer self, version_rec& v, std::string note) {
    stop_pair(self, v);
    drop_spec(v);
    if (!ended(v.state))
        v.state = vstate::unloaded;
    if (!note.empty())
        v.failure = std::move(note);
    auto& a = self->state.table.alias(v.alias);
    if (a.previous == v.serial)
        a.previous = 0;
    if (a.active == v.serial)
        a.active = 0;
    finish_unload_if_done(self, v.alias);
}

std::string log_name(const version_rec& v) {
    return "model '" + v.alias + "'" + (v.id.empty() ? std::string() : " version " + v.id);
}

void fail_version(supervisor_pointer self, version_rec& v, std::string why) {
    if (ended(v.state))
        return;
    stop_pair(self, v);
    v.failure = std::move(why);
    auto& st = self->state;
    if ((v.restartable || v.restarting) && !st.stopping && v.restarts < st.opt.max_restarts) {
        ++v.restarts;
        // The operator's only other sign of a restart is the version's counter in /health.
        spdlog::warn("{}: {}; restarting it ({} of {})", log_name(v), v.failure, v.restarts,
                     st.opt.max_restarts);
        v.has_info = false;
        start_version(self, v.serial);
        return;
    }
    v.state = vstate::failed;
    // Failures at start-up have no operation a client polls: the log and /health are where an
    // operator learns that the alias will not serve.
    if (v.restarts > 0)
        spdlog::error("{}: failed after {} restart(s): {}", log_name(v), v.restarts, v.failure);
    else
        spdlog::error("{}: failed: {}", log_name(v), v.failure);
    drop_spec(v);
    auto& a = st.table.alias(v.alias);
    if (a.active == v.serial)
        a.active = 0; // a serving version out of restarts: nothing serves the alias
    if (a.active == 0 && !a.unloading && st.opt.admission)
        // Requests for the alias are told why, not "no model" (nor sent to a dead batcher).
        self->send(st.opt.admission, msg::fail_atom_v, msg::alias_failure{v.alias, v.failure});
    v.restarting = false;
    if (v.op) {
        end_op(self, v.op, "failed", v.failure);
        v.op = 0;
    }
}

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
    if (auto* op = self->state.table.find_op(v.op))
        op->st.version = v.id;
    if (auto why = make_room(self, v, v.bytes(),
                             "file " + mib(v.file_bytes) + " + KV " + mib(v.spec.kv_budget_bytes) +
                                 ", estimated");
        !why.empty())
        return fail_version(self, v, why);
    spawn_pair(self, v);
}

void spawn_pair(supervisor_pointer self, version_rec& v) {
    v.exec_cancel = std::make_shared<model::constrain::cancel_token>();
    v.executor = spawn_executor(self->system(), v.spec.executor, v.exec_cancel);
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
                    if (auto why = make_room(self, *ver, ver->bytes(),
                                             "weights " + mib(info.weight_bytes) + " + KV " +
                                                 mib(info.kv_pool_bytes));
                        !why.empty())
                        return fail_version(self, *ver, why);
                }
                if (ver->restarting || !ver->order.warmup)
                    return on_warm(self, *ver);
                self->state.table.set_state(*ver, vstate::warming);
                self->request(exec, std::chrono::minutes(10), msg::warmup_atom_v,
                              self->state.opt.warmup_tokens)
                    .then(
                        [self, serial, exec](const msg::warmup_report& r) {
                            auto* w = find_version(self, serial);
                            if (!w || w->executor != exec)
                                return;
                            if (!r.finite)
                                return fail_on_device(self, *w, "warm-up failed: " + r.failure,
                                                      "warmup_failed");
                            on_warm(self, *w);
                        },
                        [self, serial, exec](const caf::error& e) {
                            auto* w = find_version(self, serial);
                            if (w && w->executor == exec && !receiver_down(e))
                                fail_on_device(self, *w,
                                               "warm-up failed: " +
                                                   msg::from_caf_error(e).to_string(),
                                               "warmup_failed");
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
    self->state.table.set_state(*v, vstate::loading);
    if (v->restarting || (v->has_spec && v->order.path.empty() && v->restarts > 0))
        return spawn_pair(self, *v);
    spawn_loader(self, *v);
}

std::uint64_t new_version(supervisor_pointer self, const msg::load_order& order, std::uint64_t op,
                          const model_spec* prebuilt, std::string expect_sha) {
    auto& st = self->state;
    const auto serial = st.table.add_version(order, op);
    for (const auto& gone : st.table.take_forgotten())
        forget_in_admission(self, gone);
    if (st.table.alias(order.alias).active == 0 && st.opt.admission)
        // Nothing serves the alias while this version loads: its requests are told to come back
        // (not "no model", nor an earlier version's failure) until the route or the failure.
        self->send(st.opt.admission, msg::load_atom_v, order.alias);
    auto& v = *find_version(self, serial);
    v.expect_sha = std::move(expect_sha);
    if (prebuilt) {
        v.spec = *prebuilt;
        v.has_spec = true;
        v.restartable = true;
    }
    start_version(self, serial);
    return serial;
}

} // namespace bitnet::actors
