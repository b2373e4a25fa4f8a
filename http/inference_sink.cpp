// The sink actor of one inference request (see inference_sink.hpp): submit, relay, demonitor.
#include "http/inference_sink.hpp"

#include "messages/errors.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>

namespace bitnet::http {

namespace {

/// One per request: submits to admission and relays the request's events. Quits at the end, or
/// when the HTTP session kills it (client gone), which the batcher sees as a cancel.
msg::sink_actor::behavior_type sink_fn(msg::sink_actor::pointer self, msg::admission_actor adm,
                                       msg::generate_request req, std::shared_ptr<sink_target> t) {
    // The batcher this sink monitors. A monitor lives on the monitored actor until it ends or is
    // removed, and holds the sink's control block (the whole actor's memory) until then: a sink
    // that quits without demonitoring leaks about 1 KiB per request into a long-lived batcher.
    auto watched = std::make_shared<caf::actor_addr>();
    // n > 1: one completion per choice; the request is over with the last.
    auto choices_left = std::make_shared<std::uint32_t>(std::max(req.n, 1u));
    auto finish = [self, watched](caf::error reason = {}) {
        if (*watched)
            self->demonitor(*watched);
        self->quit(std::move(reason));
    };
    self->request(adm, std::chrono::seconds(30), msg::submit_atom_v, std::move(req),
                  caf::actor_cast<msg::sink_actor>(self))
        .then(
            [self, t, watched](msg::request_id) {
                t->on_admitted();
                // The reply comes from the batcher that holds the sequence (admission
                // delegates): watch it, so a crashed model fails this request instead of
                // leaving the client waiting.
                if (auto& sender = self->current_sender()) {
                    *watched = caf::actor_cast<caf::actor_addr>(sender);
                    self->monitor(*watched);
                }
            },
            [t, finish](caf::error& e) {
                t->on_fail(std::move(e));
                finish();
            });
    self->set_down_handler([t, finish](caf::down_msg& dm) {
        // A crashed pair restarts, an unloaded version's successor serves: the client may retry
        // (503 worker_stopped with a Retry-After), as for a request that met the stopped batcher.
        t->on_fail(msg::to_caf_error(errc::cancelled, "the model's batcher stopped (" +
                                                          caf::to_string(dm.reason) +
                                                          ") before the request finished"));
        finish();
    });
    // Killed by the session (client gone, drain cut): still demonitor on the way out.
    self->set_exit_handler([finish](caf::exit_msg& em) { finish(std::move(em.reason)); });
    return {
        [t](msg::token_atom, msg::token_event& ev) { t->on_token(std::move(ev)); },
        [t, finish, choices_left](msg::done_atom, msg::completion& c) {
            t->on_done(std::move(c));
            if (--*choices_left == 0)
                finish();
        },
        [t, finish](msg::fail_atom, msg::request_id, caf::error& e) {
            t->on_fail(std::move(e));
            finish();
        },
    };
}

} // namespace

caf::actor spawn_sink(caf::actor_system& sys, msg::admission_actor admission,
                      msg::generate_request req, std::shared_ptr<sink_target> t) {
    return caf::actor_cast<caf::actor>(
        sys.spawn(sink_fn, std::move(admission), std::move(req), std::move(t)));
}

} // namespace bitnet::http
