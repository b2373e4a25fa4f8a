// The operational routes: /health (and /health/ready), /metrics, /v1/stats, /v1/models and
// /v1/models/{alias}. Each gathers a snapshot of the actors (admission's readiness and queue
// stats, the supervisor's model states) from a helper actor, so no asio thread waits, then
// answers on the connection's strand with a body from api_render.hpp.
#include "http/routes/session.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include <algorithm>

namespace bitnet::http {

namespace bhttp = boost::beast::http;
namespace net = boost::asio;

/// Asks admission (readiness, queue stats) and the supervisor (model states), then runs `f` on
/// this connection's strand. A helper actor does the asking; no asio thread waits.
void session::with_snapshot(std::function<void(status_snapshot)> f) {
    auto self = this->self();
    auto ex = stream_.get_executor();
    auto snap = std::make_shared<status_snapshot>();
    auto finish = [ex, f, snap, self] {
        net::post(ex, [f, snap, self] { self->safely("status", [&] { f(std::move(*snap)); }); });
    };
    auto adm = srv_.admission;
    auto sup = srv_.opt.supervisor;
    // CAF 0.17 dereferences a null argument tuple when an actor function takes no spawn
    // arguments (UBSan: reference binding to null pointer), so this actor takes one unused
    // argument.
    srv_.sys.spawn(
        [adm, sup, snap, finish](caf::event_based_actor* a, int /*unused*/) {
            auto ask_models = [a, sup, snap, finish] {
                if (!sup)
                    return finish();
                a->request(sup, std::chrono::seconds(5), msg::models_atom_v)
                    .then(
                        [snap, finish](std::vector<msg::model_status> ms) {
                            snap->supervisor_up = true;
                            snap->models = std::move(ms);
                            finish();
                        },
                        [finish](caf::error&) { finish(); });
            };
            a->request(adm, std::chrono::seconds(5), msg::ready_atom_v)
                .then(
                    [a, adm, snap, ask_models](bool ok, std::string why) {
                        snap->admission_up = true;
                        snap->ready = ok;
                        snap->ready_reason = std::move(why);
                        a->request(adm, std::chrono::seconds(5), msg::stats_atom_v)
                            .then(
                                [snap, ask_models](std::vector<msg::batcher_stats> st) {
                                    snap->stats = std::move(st);
                                    ask_models();
                                },
                                [ask_models](caf::error&) { ask_models(); });
                    },
                    [snap, ask_models](caf::error& e) {
                        snap->ready_reason = "admission does not answer: " + caf::to_string(e);
                        ask_models();
                    });
        },
        0);
}

namespace {

void hide_operator_details(msg::model_status& m) {
    const char* hidden = "failed (the admin key sees why)";
    m.path.clear();
    if (!m.failure.empty())
        m.failure = hidden;
    for (auto& v : m.versions) {
        v.path.clear();
        if (!v.failure.empty())
            v.failure = hidden;
    }
    for (auto& op : m.operations)
        if (!op.failure.empty())
            op.failure = hidden;
}

} // namespace

void session::do_health(const std::string& target, const std::string& model) {
    with_snapshot([self = self(), target, model](status_snapshot snap) {
        // An open route: load failures name paths, which only the admin key (or an open
        // server) sees, as on /v1/models.
        if (!self->sees_all())
            for (auto& m : snap.models)
                hide_operator_details(m);
        if (!model.empty()) {
            // One alias's readiness: its serving version is ready (not loading, not being
            // replaced after a crash or a stuck step) and admission is up.
            const auto it = std::find_if(snap.models.begin(), snap.models.end(),
                                         [&](const auto& m) { return m.alias == model; });
            const bool ready = snap.admission_up && it != snap.models.end() && it->state == "ready";
            if (!ready)
                snap.ready_reason = it == snap.models.end()
                                        ? "no model '" + model + "' is loaded"
                                        : "model '" + model + "' is " + it->state +
                                              (it->failure.empty() ? "" : ": " + it->failure);
            snap.ready = ready;
        }
        const auto uptime =
            std::chrono::duration_cast<std::chrono::seconds>(steady::now() - self->srv_.started)
                .count();
        auto body = health_body(snap, self->srv_.opt.build,
                                static_cast<bool>(self->srv_.opt.supervisor), uptime);
        self->send_json(target, snap.ready ? 200 : 503, std::move(body), "-", {},
                        snap.ready ? 0 : 1);
    });
}

namespace {

/// The process's bounded tables, with the Responses store this server owns among them.
std::vector<memory::table_figures> memory_tables(const response_store& store) {
    auto t = memory::tables();
    t.push_back({"responses_store", store.bytes(), store.limits().total_bytes, store.size(),
                 store.evictions()});
    return t;
}

} // namespace

void session::do_metrics() {
    with_snapshot([self = self()](status_snapshot snap) {
        self->srv_.m.queues(snap.stats);
        self->srv_.m.memory(memory_tables(self->srv_.responses));
        self->srv_.m.connections_open(self->srv_.open_connections());
        std::vector<std::array<std::string, 4>> served;
        for (const auto& m : snap.models)
            if (m.state == "ready")
                served.push_back({m.alias, m.version, m.info.format, m.info.device});
        self->srv_.m.model_info(served);
        self->res_ = {bhttp::status::ok, 11};
        self->res_.set(bhttp::field::content_type, "text/plain; version=0.0.4");
        self->res_.body() = self->srv_.m.render();
        self->write_response("/metrics", false);
    });
}

void session::do_stats() {
    if (!sees_all()) {
        // A user key: its own requests and tokens, nothing of the other keys' traffic.
        const auto f = srv_.usage.of(client_key_);
        return send_json("/v1/stats", 200,
                         key_stats_body(f.requests, f.prompt_tokens, f.completion_tokens));
    }
    with_snapshot([self = self()](status_snapshot snap) {
        const process_figures process{memory_tables(self->srv_.responses),
                                      self->srv_.open_connections(),
                                      self->srv_.connections->reclaimed.load()};
        self->send_json("/v1/stats", 200, stats_body(snap.stats, self->srv_.m.live(), process));
    });
}

/// GET /v1/models (alias empty) or GET /v1/models/{alias}.
void session::do_models(std::string alias) {
    const std::string route = alias.empty() ? "/v1/models" : "/v1/models/{alias}";
    with_snapshot([self = self(), alias, route](status_snapshot snap) {
        // A user key sees aliases, versions, formats and sizes; where the files live and why a
        // load failed are the operator's (README, "Security").
        if (!self->sees_all())
            for (auto& m : snap.models)
                hide_operator_details(m);
        // Without a supervisor the models are the ones admission routes to.
        if (!self->srv_.opt.supervisor)
            for (const auto& x : snap.stats)
                if (!x.model.empty())
                    snap.models.push_back(
                        {x.model, "1", "ready", {}, {}, {}, 0, 0, {}, {}, {}, {}, 0});
        if (alias.empty())
            return self->send_json(route, 200, models_list_body(snap.models));
        for (const auto& m : snap.models)
            if (m.alias == alias)
                return self->send_json(route, 200, model_detail_body(m, snap.stats));
        auto e = to_api_error({errc::not_found, "no model '" + excerpt(alias) + "'"});
        e.suggestion = "GET /v1/models lists the served models";
        self->send_error(route, e, "-");
    });
}

} // namespace bitnet::http
