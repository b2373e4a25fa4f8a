// Model management (admin role): POST /v1/models/load, POST /v1/models/{alias}/rollback,
// DELETE /v1/models/{alias}, and the test hook POST /v1/models/{alias}/crash. Each order goes
// to the supervisor from a helper actor (no asio thread waits); its ticket comes back onto the
// connection's strand as a 202 or the refusal's error (404, 409, 400).
#include "common/placement_name.hpp"
#include "http/routes/session.hpp"

#include <boost/asio/post.hpp>
#include <boost/json/object.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

namespace bitnet::http {

namespace net = boost::asio;

namespace {

/// A ticket for a request the supervisor never answered.
msg::operation_ticket unanswered(const std::string& alias, const caf::error& e) {
    return {
        "unavailable", "the supervisor did not answer: " + caf::to_string(e), {}, alias, {}, {}};
}

/// An alias or version: 1..max characters of letters, digits, '.', '_', '-', ':'.
bool name_ok(std::string_view s, std::size_t max) {
    return !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
               c == ':';
    });
}

} // namespace

session::ticket_answer session::ticket_on_strand(const std::string& route) {
    auto ex = stream_.get_executor();
    auto self = this->self();
    return [ex, self, route](msg::operation_ticket t) {
        net::post(ex, [self, route, t = std::move(t)] {
            self->safely("operation", [&] { self->ticket_reply(route, t); });
        });
    };
}

/// Sends one management message to the supervisor from a helper actor and answers with its
/// ticket on this connection's strand (no asio thread waits).
void session::ask_supervisor(const std::string& route, supervisor_ask ask) {
    auto sup = srv_.opt.supervisor;
    if (!sup) {
        api_error e;
        e.status = 503;
        e.type = "overloaded";
        e.code = "not_ready";
        e.message = "this server runs without a supervisor: models cannot be managed";
        e.suggestion = "start bitnet-server with its supervisor";
        return send_error(route, e, "-");
    }
    auto answer = ticket_on_strand(route);
    // One unused spawn argument: CAF 0.17 dereferences a null argument tuple otherwise.
    srv_.sys.spawn(
        [sup, ask, answer](caf::event_based_actor* a, int /*unused*/) { ask(a, sup, answer); }, 0);
}

void session::ask_cluster(const std::string& route, msg::roll_order order) {
    // The admin key this request passed with: the roll proves each peer's order with it (the key
    // itself stays on this node).
    order.credential = client_key_;
    auto cluster = srv_.opt.cluster;
    auto answer = ticket_on_strand(route);
    // One unused spawn argument: CAF 0.17 dereferences a null argument tuple otherwise.
    srv_.sys.spawn(
        [cluster, order, answer](caf::event_based_actor* a, int /*unused*/) {
            a->request(cluster, std::chrono::seconds(30), msg::roll_atom_v, order)
                .then([answer](msg::operation_ticket t) { answer(std::move(t)); },
                      [answer, alias = order.load.alias](caf::error& e) {
                          answer(unanswered(alias, e));
                      });
        },
        0);
}

std::optional<std::vector<std::string>> session::nodes_field(const std::string& route,
                                                             const boost::json::object& o) {
    std::vector<std::string> out;
    const auto* n = o.if_contains("nodes");
    if (!n || n->is_null())
        return out;
    if (!n->is_array() || n->get_array().empty() || n->get_array().size() > 256) {
        send_error(route, invalid_value("nodes", "nodes must be a non-empty array of node names"),
                   "-");
        return std::nullopt;
    }
    for (const auto& v : n->get_array()) {
        if (!v.is_string() || !name_ok(v.get_string(), 64)) {
            send_error(route,
                       invalid_value("nodes", "each node name must be 1..64 characters of "
                                              "letters, digits, '.', '_', '-'"),
                       "-");
            return std::nullopt;
        }
        out.emplace_back(v.get_string());
    }
    if (!srv_.opt.clustered) {
        send_error(route,
                   invalid_value("nodes", "this server is not part of a cluster: there are no "
                                          "nodes to name (start it with --cluster-listen)"),
                   "-");
        return std::nullopt;
    }
    return out;
}

void session::ticket_reply(const std::string& route, const msg::operation_ticket& t) {
    if (t.refusal.empty())
        return send_json(route, 202, ticket_body(t));
    api_error e;
    e.message = t.message;
    if (t.refusal == "not_found") {
        e = to_api_error({errc::not_found, t.message});
        e.suggestion = "GET /v1/models lists the served models";
    } else if (t.refusal == "conflict") {
        e.status = 409;
        e.type = "conflict_error";
        e.code = "operation_in_progress";
        e.suggestion = "wait for operation " + t.operation_id + " to end (GET /v1/models/" +
                       t.alias + "), then retry";
    } else if (t.refusal == "unavailable") {
        // Nothing was wrong with the request: the server side did not answer in time.
        e.status = 503;
        e.type = "server_error";
        e.code = "unavailable";
        e.retry_after_s = 5;
        e.suggestion = "retry after the Retry-After delay";
    } else if (t.refusal == "forbidden") {
        e.status = 403;
        e.type = "permission_error";
        e.code = "forbidden";
        e.suggestion = "a roll starts from a node's own API, with its admin key";
    } else {
        e = invalid_value("", t.message);
    }
    const auto id = "req-" + std::to_string(srv_.next_id.fetch_add(1));
    send_json(route, e.status, ticket_error_body(e, id, t.operation_id), id, {}, e.retry_after_s);
}

/// POST /v1/models/load {"alias","path","version"?,"warmup"?,"device"?,"draft_model"?}
void session::do_load(const std::string& body) {
    const std::string route = "/v1/models/load";
    auto o = body_object(route, body);
    if (!o)
        return;
    msg::load_order order;
    const auto* alias = o->if_contains("alias");
    if (!alias || !alias->is_string() || !name_ok(alias->get_string(), 128))
        return send_error(route,
                          invalid_value("alias", "alias must be 1..128 characters of "
                                                 "letters, digits, '.', '_', '-', ':'"),
                          "-");
    order.alias = alias->get_string();
    const auto* path = o->if_contains("path");
    if (!path || !path->is_string() || path->get_string().empty())
        return send_error(route, invalid_value("path", "path must name a GGUF file"), "-");
    order.path = path->get_string();
    if (const auto* v = o->if_contains("version"); v && !v->is_null()) {
        if (!v->is_string() || !name_ok(v->get_string(), 64))
            return send_error(route,
                              invalid_value("version", "version must be 1..64 characters of "
                                                       "letters, digits, '.', '_', '-', ':'"),
                              "-");
        order.version = v->get_string();
    }
    if (const auto* dm = o->if_contains("draft_model"); dm && !dm->is_null()) {
        if (!dm->is_string() || dm->get_string().empty())
            return send_error(route,
                              invalid_value("draft_model", "draft_model must name a GGUF file "
                                                           "with the model's vocabulary"),
                              "-");
        order.draft_path = dm->get_string();
    }
    const auto warmup = bool_field(route, *o, "warmup", order.warmup);
    if (!warmup)
        return;
    order.warmup = *warmup;
    if (const auto* d = o->if_contains("device"); d && !d->is_null()) {
        const auto why = d->is_string() ? placement_name_problem(d->get_string())
                                        : std::string("device must be a string");
        if (!why.empty())
            return send_error(route,
                              invalid_value("device", "device must be auto, cpu, cuda, cuda:N or "
                                                      "sim:N (N 0..63): " +
                                                          why),
                              "-");
        order.device = d->get_string();
    }
    const auto nodes = nodes_field(route, *o);
    if (!nodes)
        return;
    if (srv_.opt.clustered)
        return ask_cluster(route, msg::roll_order{"load", order, *nodes});
    ask_supervisor(route, [order](caf::event_based_actor* a, msg::supervisor_actor sup,
                                  ticket_answer answer) {
        a->request(sup, std::chrono::seconds(30), msg::load_atom_v, order)
            .then([answer](msg::operation_ticket t) { answer(std::move(t)); },
                  [answer, alias = order.alias](caf::error& e) { answer(unanswered(alias, e)); });
    });
}

/// POST /v1/models/{alias}/rollback, DELETE /v1/models/{alias}, and the test hook
/// POST /v1/models/{alias}/crash.
void session::do_model_op(const std::string& kind, const std::string& alias,
                          const std::string& body) {
    const std::string route = kind == "unload"     ? "/v1/models/{alias}"
                              : kind == "rollback" ? "/v1/models/{alias}/rollback"
                                                   : "/v1/models/{alias}/crash";
#ifdef BITNET_TEST_HOOKS
    if (kind == "crash") {
        auto sup = srv_.opt.supervisor;
        if (sup)
            caf::anon_send(sup, msg::crash_atom_v, alias);
        spdlog::warn("test hook: crash injected into the serving executor of '{}'", alias);
        return send_json(route, 202, alias_body(alias));
    }
#endif
    // An optional body: {"nodes": [...]} limits a rolling operation to those nodes.
    std::vector<std::string> nodes;
    if (body.find_first_not_of(" \t\r\n") != std::string::npos) {
        auto o = body_object(route, body);
        if (!o)
            return;
        auto n = nodes_field(route, *o);
        if (!n)
            return;
        nodes = std::move(*n);
    }
    if (srv_.opt.clustered) {
        msg::roll_order order{kind, {}, std::move(nodes)};
        order.load.alias = alias;
        return ask_cluster(route, std::move(order));
    }
    ask_supervisor(route, [kind, alias](caf::event_based_actor* a, msg::supervisor_actor sup,
                                        ticket_answer answer) {
        auto on_err = [answer, alias](caf::error& e) { answer(unanswered(alias, e)); };
        auto on_ok = [answer](msg::operation_ticket t) { answer(std::move(t)); };
        if (kind == "rollback")
            a->request(sup, std::chrono::seconds(30), msg::rollback_atom_v, alias)
                .then(on_ok, on_err);
        else
            a->request(sup, std::chrono::seconds(30), msg::unload_atom_v, alias)
                .then(on_ok, on_err);
    });
}

} // namespace bitnet::http
