// Admission's routing to other nodes' replicas (actors/admission/admission.hpp, "In a cluster"):
// the replica on the fastest device class with the least outstanding work (ranks_before), requests
// tokenized by a remote text actor and handed to the stream relay, and the replica a lost stream
// continues on.
#include "actors/admission/admission_state.hpp"
#include "messages/errors.hpp"

#include <algorithm>

namespace bitnet::actors::admission_detail {

/// The work a replica holds: what it last reported plus what was sent to it since.
std::uint64_t load_of(const model_queue& q) {
    return q.last.outstanding_tokens + q.work_since;
}
std::uint64_t load_of(const remote_replica& r) {
    return r.view.outstanding_tokens + r.work_since;
}

replica_rank rank_of(const model_queue& q) {
    return {q.info.device, load_of(q)};
}
replica_rank rank_of(const remote_replica& r) {
    // A node from before replica_view had a device still sends it in its info.
    return {r.view.device.empty() ? r.view.info.device : r.view.device, load_of(r)};
}

/// The best replica of `alias` on another node (fastest device class, then least loaded), of
/// `version` unless it is empty.
remote_replica* best_remote(admission_state& st, const std::string& alias,
                            const std::string& version) {
    auto it = st.remote.find(alias);
    if (it == st.remote.end())
        return nullptr;
    remote_replica* best = nullptr;
    for (auto& r : it->second)
        if ((version.empty() || r.view.version == version) &&
            (!best || ranks_before(rank_of(r), rank_of(*best))))
            best = &r;
    return best;
}

/// This node's replica of `alias` as the cluster sees it.
msg::replica_view local_view(const admission_state& st, const std::string& alias,
                             const model_queue& q) {
    msg::replica_view v;
    v.node = st.opt.node_name;
    v.alias = alias;
    v.version = q.last.model_version;
    v.batcher = caf::actor_cast<caf::actor>(q.batcher);
    v.text = caf::actor_cast<caf::actor>(q.text);
    v.info = routing_info(q.info);
    v.outstanding_tokens = load_of(q);
    v.running = q.last.running;
    v.waiting = q.last.waiting[0] + q.last.waiting[1] + q.last.waiting[2] + q.admitted_since;
    v.device = q.info.device;
    return v;
}

/// The alias a request without one means: the configured default, else the one alias the
/// cluster serves when there is exactly one (a routing node has no model of its own).
std::string default_alias(const admission_state& st) {
    if (!st.opt.default_model.empty())
        return st.opt.default_model;
    std::vector<std::string> known;
    for (const auto& [alias, q] : st.models)
        known.push_back(alias);
    for (const auto& alias : st.seen_remote)
        if (std::find(known.begin(), known.end(), alias) == known.end())
            known.push_back(alias);
    return known.size() == 1 ? known.front() : std::string{};
}

/// Why a request for another node's replica `r` is refused, or nothing (then it is counted).
std::optional<caf::error> remote_refusal(admission_pointer self, remote_replica& r,
                                         const msg::generate_request& req) {
    auto& st = self->state;
    if (auto valid = check_request(limits_of(r.view.info), req); !valid)
        return msg::to_caf_error(valid.error());
    if (st.draining)
        return msg::to_caf_error(errc::draining, "draining: the server is shutting down", 5);
    const std::uint64_t waiting = r.view.waiting + r.admitted_since;
    if (waiting >= st.opt.max_waiting_requests)
        return msg::to_caf_error(errc::queue_full,
                                 "queue full: " + std::to_string(waiting) +
                                     " requests waiting at the least loaded replica (node '" +
                                     r.view.node + "', cap " +
                                     std::to_string(st.opt.max_waiting_requests) + ")",
                                 1);
    if (auto no = quota_refusal(st, req))
        return no;
    ++r.admitted_since;
    r.work_since += req.prompt.size() + req.max_tokens;
    return std::nullopt;
}

/// A request for another node's replica: tokenized there when it came as text (the same file
/// tokenizes the same on every node), then checked and handed to this node's stream relay.
caf::result<msg::request_id> submit_remote(admission_pointer self, remote_replica& r,
                                           msg::generate_request req, msg::sink_actor sink) {
    req.model = r.view.alias;
    if (req.text.form == msg::prompt_form::ids) {
        if (auto no = remote_refusal(self, r, req))
            return std::move(*no);
        return self->delegate(self->state.relay, msg::submit_atom_v, std::move(req),
                              std::move(sink), r.view);
    }
    auto prompt = req.text;
    auto rp = self->make_response_promise<msg::request_id>();
    auto view = r.view;
    const auto serial = self->state.next_encode++;
    self->state.encoding.emplace(serial, admission_state::remote_encode{view.node, req, sink, rp});
    req.text = {};
    self->request(caf::actor_cast<msg::text_actor>(view.text), std::chrono::seconds(60),
                  msg::encode_atom_v, std::move(prompt))
        .then(
            [self, rp, view, serial, req = std::move(req),
             sink = std::move(sink)](std::vector<msg::token_id>& ids) mutable {
                if (self->state.encoding.erase(serial) == 0)
                    return; // its node was lost meanwhile: the request started over
                req.prompt = std::move(ids);
                // The replica as it is now (a heartbeat may have refreshed it meanwhile).
                auto* now = best_remote(self->state, view.alias, view.version);
                remote_replica fallback{view};
                if (auto no = remote_refusal(self, now ? *now : fallback, req))
                    rp.deliver(std::move(*no));
                else
                    rp.delegate(self->state.relay, msg::submit_atom_v, std::move(req),
                                std::move(sink), now ? now->view : view);
            },
            [self, rp, serial, view](caf::error& e) mutable {
                auto it = self->state.encoding.find(serial);
                if (it == self->state.encoding.end())
                    return;
                auto pending = std::move(it->second);
                self->state.encoding.erase(it);
                if (msg::from_caf_error(e).value() != errc::cancelled) {
                    rp.deliver(std::move(e));
                    return;
                }
                // Its text actor is gone (the node was lost, the link broke before the cluster
                // said so): that replica is no place for new work; the request starts over.
                for (auto& [alias, rs] : self->state.remote)
                    std::erase_if(
                        rs, [&](const remote_replica& x) { return x.view.text == view.text; });
                rp.delegate(caf::actor_cast<msg::admission_actor>(self), msg::submit_atom_v,
                            std::move(pending.req), std::move(pending.sink));
            });
    return rp;
}

/// `node` is lost: the requests its text actor was tokenizing start over, routed again.
void restart_encodes(admission_pointer self, const std::string& node) {
    auto& enc = self->state.encoding;
    for (auto it = enc.begin(); it != enc.end();) {
        if (it->second.node != node) {
            ++it;
            continue;
        }
        auto e = std::move(it->second);
        it = enc.erase(it);
        e.rp.delegate(caf::actor_cast<msg::admission_actor>(self), msg::submit_atom_v,
                      std::move(e.req), std::move(e.sink));
    }
}

bool is_gone(const admission_state& st, const caf::actor& batcher) {
    return batcher && std::find(st.gone_batchers.begin(), st.gone_batchers.end(),
                                batcher.address()) != st.gone_batchers.end();
}

/// A stream's new replica after its replica was lost: the same version, the best ranked (device
/// class, then load), here or on a node that is up, never the batcher `gone` (it stopped under
/// the stream; the heartbeat that drops it may not have come yet).
caf::result<msg::replica_view> place(admission_pointer self, const std::string& alias,
                                     const std::string& version, const caf::actor& gone) {
    auto& st = self->state;
    if (gone && !is_gone(st, gone)) {
        st.gone_batchers.push_back(gone.address());
        if (st.gone_batchers.size() > k_gone_kept)
            st.gone_batchers.pop_front();
        for (auto& [a, rs] : st.remote)
            std::erase_if(rs, [&](const remote_replica& x) { return x.view.batcher == gone; });
    }
    auto* r = best_remote(st, alias, version);
    auto it = st.models.find(alias);
    const bool local_fits = it != st.models.end() && it->second.last.model_version == version &&
                            caf::actor_cast<caf::actor>(it->second.batcher) != gone;
    if (local_fits && (!r || !ranks_before(rank_of(*r), rank_of(it->second)))) {
        it->second.work_since += 1; // the next request sees it as busier
        it->second.work_total += 1;
        return local_view(st, alias, it->second);
    }
    if (r) {
        ++r->admitted_since;
        return r->view;
    }
    return msg::to_caf_error(
        errc::replica_lost,
        "no replica of model '" + alias + "' version " + version + " is up in the cluster", 5);
}

} // namespace bitnet::actors::admission_detail
