// GET /v1/cluster: every member of the cluster as this node sees it (state up, suspect or down,
// the models each serves, its running and waiting requests) and the rolling model operations. The
// node's cluster actor answers from a helper actor (no asio thread waits); the body is built on
// the connection's strand.
#include "http/routes/session.hpp"

#include <boost/asio/post.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

namespace bitnet::http {

namespace json = boost::json;
namespace net = boost::asio;

namespace {

json::array strings(const std::vector<std::string>& xs) {
    json::array a;
    for (const auto& x : xs)
        a.emplace_back(x);
    return a;
}

std::string cluster_body(const msg::cluster_view& v) {
    json::array nodes;
    for (const auto& n : v.nodes) {
        json::array models;
        for (const auto& m : n.models)
            models.push_back(
                json::object{{"alias", m.alias}, {"version", m.version}, {"state", m.state}});
        json::object o{{"name", n.name},      {"address", n.address},        {"state", n.state},
                       {"self", n.self},      {"models", std::move(models)}, {"running", n.running},
                       {"waiting", n.waiting}};
        if (n.last_seen_ms >= 0 && !n.self)
            o["last_heartbeat_ms"] = n.last_seen_ms;
        if (!n.roles.empty())
            o["roles"] = n.roles;
        nodes.push_back(std::move(o));
    }
    json::array rolls;
    for (const auto& r : v.rolls) {
        json::object o{{"id", r.id},
                       {"kind", r.kind},
                       {"alias", r.alias},
                       {"version", r.version},
                       {"state", r.state},
                       {"nodes", strings(r.nodes)},
                       {"done", strings(r.done)},
                       {"started_ms", r.started_ms}};
        if (!r.failure.empty())
            o["failure"] = r.failure;
        if (r.finished_ms != 0)
            o["finished_ms"] = r.finished_ms;
        rolls.push_back(std::move(o));
    }
    return json::serialize(json::object{{"self", v.self},
                                        {"clustered", v.clustered},
                                        {"nodes", std::move(nodes)},
                                        {"operations", std::move(rolls)}});
}

} // namespace

void session::do_cluster() {
    const std::string route = "/v1/cluster";
    auto cluster = srv_.opt.cluster;
    if (!cluster)
        return send_json(route, 200, cluster_body({}));
    auto ex = stream_.get_executor();
    auto self = this->self();
    auto answer = [ex, self, route](std::optional<msg::cluster_view> v) {
        net::post(ex, [self, route, v = std::move(v)] {
            self->safely("cluster", [&] {
                if (v)
                    return self->send_json(route, 200, cluster_body(*v));
                api_error e;
                e.status = 503;
                e.type = "overloaded";
                e.code = "not_ready";
                e.message = "the cluster actor did not answer";
                e.suggestion = "retry shortly";
                self->send_error(route, e, "-");
            });
        });
    };
    // One unused spawn argument: CAF 0.17 dereferences a null argument tuple otherwise.
    srv_.sys.spawn(
        [cluster, answer](caf::event_based_actor* a, int /*unused*/) {
            a->request(cluster, std::chrono::seconds(5), msg::members_atom_v)
                .then([answer](msg::cluster_view v) { answer(std::move(v)); },
                      [answer](caf::error&) { answer(std::nullopt); });
        },
        0);
}

} // namespace bitnet::http
