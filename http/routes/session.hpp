// One HTTP connection as the routes see it (class session, a transport/connection.hpp connection)
// and the request in progress on it. The class is one object on one strand, but its members are
// defined by concern, one file each:
//   session.cpp             the request's side of the transport's hooks: the drain cut, a gone
//                           client, an internal failure, each family's headers and error shape,
//                           the stream's head
//   session_dispatch.cpp    auth, routing and media type, then the switch on route_id
//   handlers_inference.cpp  inference routes: start (families.hpp), the sink's events, each
//                           rendered by the request's family turn
//   handlers_status.cpp     health, metrics, stats, models (a snapshot of the actors)
//   handlers_models.cpp     model management: load, rollback, unload, the crash hook, tickets
//   handlers_text.cpp       tokenize, detokenize, count_tokens, apply-template
//   handlers_cluster.cpp    the cluster's members and rolls
//   handlers_web.cpp        the web page (GET /) and its files (GET /ui/NAME)
//   handlers_choices.cpp    n > 1: each choice's tokens and end
//   handlers_responses.cpp  the Responses store's routes (its answers: families.hpp)
//   session_trace.cpp       the GenAI attributes of the request's span, log correlation
// Every handler runs under safely(): no exception leaves a session. Internal to http/.
#pragma once

#include "common/trace.hpp"
#include "http/api_json.hpp"
#include "http/api_render.hpp"
#include "http/errors.hpp"
#include "http/family_turn.hpp"
#include "http/inference_sink.hpp"
#include "http/observe/log_context.hpp"
#include "http/routes/families.hpp"
#include "http/routes/routes.hpp"
#include "http/routes/server_impl.hpp"
#include "http/transport/connection.hpp"
#include "http/turn_reply.hpp"
#include "http/ui/web_assets.hpp"

#include <boost/json/object.hpp>
#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::http {

class session final : public connection, private frame_writer {
public:
    session(tcp::socket&& s, server::impl& srv);
    ~session() override;

private:
    /// The request in progress on this connection (one at a time: HTTP/1.1 without pipelining
    /// of responses).
    struct call {
        std::string route;
        std::string req_id;
        std::string model;
        bool stream = false;
        caf::actor sink;
        std::string text; ///< the generated text outside calls the model opened (one choice)
        steady::time_point start = steady::now();
        steady::time_point last_token{};
        steady::time_point first_token{};
        std::int64_t created = unix_now();
        /// The prompt's length in tokens: known at once for token ids, from the first token event
        /// for text (the model version that runs the request tokenizes it).
        std::uint32_t prompt_tokens = 0;
        std::size_t n_tokens = 0; ///< real tokens received
        bool ended = false;
        bool cut = false; ///< ended by the drain deadline (session::cut)
        call_count active;
        bool echo = false;      ///< the prompt comes back first (completions `echo`)
        bool echoed = false;    ///< the prompt echo arrived (a moved request's second is dropped)
        bool tool_call = false; ///< the text is a forced tool call (turn_mode::forced_call)
        /// The one function a forced call names (its arguments alone are generated, and
        /// streamed as argument deltas); empty: the text is {"name","arguments"}.
        std::string tool_name;
        /// tool_choice "auto" with tools: the model may open calls itself. Their text comes
        /// apart from the reply's (token_event::call_text) and is settled at the end.
        bool auto_tools = false;
        std::string call_text;
        /// The turn as settled at its end (settle_turn_of): what every family renders.
        std::optional<turn_reply> reply;
        bool has_stops = false; ///< the request had stop strings (Anthropic's stop_reason)
        /// The family that renders the turn, with its own state for it.
        std::unique_ptr<family_turn> family;
        turn_facts facts; ///< what the family is told of the request (session::facts)
        /// n > 1: the choices' counts and ends (what each gathered is the family's).
        struct choice {
            std::uint32_t n_tokens = 0; ///< real tokens received (what a cut one counts)
            std::optional<msg::completion> done;
        };
        std::uint32_t n_choices = 1;
        std::vector<choice> choices;
    };

    [[nodiscard]] std::shared_ptr<session> self() {
        return std::static_pointer_cast<session>(shared_from_this());
    }

    // ---- the transport's hooks (session.cpp) ---------------------------------------------

    void handle(request req) override;
    [[nodiscard]] std::string route_label(std::string_view method,
                                          std::string_view path) const override;
    [[nodiscard]] bool request_open() const override { return call_.has_value(); }
    [[nodiscard]] bool request_running() const override { return call_ && !call_->ended; }
    [[nodiscard]] std::string request_id() const override { return call_ ? call_->req_id : "-"; }
    void cut_request() override;
    void request_gone() override;
    void stream_sent() override { call_.reset(); }
    void internal_failure(const char* what, const char* why) noexcept override;
    [[nodiscard]] log_fields log_context() const override;
    [[nodiscard]] std::string error_body_for(const std::string& route, const api_error& e,
                                             const std::string& id) const override;
    [[nodiscard]] std::vector<std::pair<std::string, std::string>>
    family_headers(const std::string& route, const std::string& req_id) const override;

    /// The stream's head, then what each family opens its stream with (Responses: created and
    /// the first item; chat: each choice's role).
    void begin_stream();
    /// A family's stream frame, in the transport's framing (frame_writer).
    void frame(const char* name, const std::string& data) override;
    /// What every family knows of the request in progress (call::facts, brought up to date).
    [[nodiscard]] const turn_facts& facts();
    /// The request's answer is complete: the stream's last chunk.
    void end_stream();

    // ---- routing (session_dispatch.cpp) ------------------------------------------------

    /// Why a caller holding `key` may not use a route that needs `need`, or nothing.
    [[nodiscard]] std::optional<api_error> authorize(role need, const std::string& key) const;
    /// Runs the route the table matched.
    void dispatch(const route& r, const std::string& alias, const std::string& label,
                  const request& req);
    /// The JSON object of a request body, or nullopt after the 400 that says why not.
    std::optional<boost::json::object> body_object(const std::string& route,
                                                   const std::string& body);
    /// An optional boolean field: `fallback` when absent or null, nullopt after the 400 that
    /// says it must be true or false.
    std::optional<bool> bool_field(const std::string& route, const boost::json::object& o,
                                   const char* name, bool fallback);

    // ---- inference (handlers_inference.cpp) --------------------------------------------

    /// An inference request on `route` (the pattern its family registered under).
    void start_inference(const std::string& route, const std::string& body);
    [[nodiscard]] msg::generate_request generate_request_of(call& c, started_turn& s,
                                                            std::uint64_t id) const;
    [[nodiscard]] std::shared_ptr<sink_target> make_sink_target();
    void on_token(msg::token_event ev);
    void on_echo(msg::token_event ev);
    void on_done(msg::completion c);
    /// The turn's end, settled once for every family (http/turn_reply.hpp) into call_->reply;
    /// an auto turn's opener that was no call goes to a stream as text.
    void settle_turn_of(const msg::completion& c);
    void on_fail(caf::error e);

    // ---- OpenAI's Responses store routes (handlers_responses.cpp) -------------------------

    /// GET /v1/responses/{id}: the stored response object of this key; DELETE forgets it;
    /// GET .../input_items: a page of its input items (order, limit, after from the query).
    void do_response_get(const std::string& route, const std::string& id);
    void do_response_delete(const std::string& route, const std::string& id);
    void do_response_input_items(const std::string& route, const std::string& id,
                                 const std::string& order, const std::string& limit,
                                 const std::string& after);
    // n > 1 (handlers_choices.cpp): a choice's token, a choice's end, the request's end.
    void choice_token(const msg::token_event& ev);
    void choice_done(msg::completion c);

    // ---- tracing (session_trace.cpp) ----------------------------------------------------

    /// The request's trace context and, unless the route is a probe or scrape, its span.
    void begin_trace(const request& req, const route_match& m);
    /// The GenAI request attributes on the server span (gen_ai.operation.name, .request.*),
    /// and the prompt text when otlp_include_text allows.
    void trace_request(const msg::generate_request& g, bool chat);
    /// The response's: usage, finish reasons (one per choice), the output text when allowed.
    /// `total` sums the choices' usage when there are several.
    void trace_usage(const std::vector<msg::completion>& choices,
                     const msg::completion* total = nullptr);

    // ---- health, metrics, stats, models (handlers_status.cpp) --------------------------

    void with_snapshot(std::function<void(status_snapshot)> f);
    /// /health and /health/ready; `model` (from ?model=ALIAS on /health/ready) narrows readiness
    /// to that alias: 200 only while its serving version is ready.
    void do_health(const std::string& target, const std::string& model = {});
    /// Whether this request's caller may see every tenant's figures and the operator's details
    /// (file paths, load failures): a server without API keys, an admin key (or open admin
    /// routes), or the metrics credential. A user key sees only its own.
    [[nodiscard]] bool sees_all() const;
    void do_metrics();
    void do_stats();
    void do_models(std::string alias);

    // ---- model management (handlers_models.cpp) ----------------------------------------

    using ticket_answer = std::function<void(msg::operation_ticket)>;
    using supervisor_ask =
        std::function<void(caf::event_based_actor*, msg::supervisor_actor, ticket_answer)>;
    void ask_supervisor(const std::string& route, supervisor_ask ask);
    /// Answers an operation's ticket on this connection's strand (from any thread).
    [[nodiscard]] ticket_answer ticket_on_strand(const std::string& route);
    void ticket_reply(const std::string& route, const msg::operation_ticket& t);
    void do_load(const std::string& body);
    void do_model_op(const std::string& kind, const std::string& alias, const std::string& body);
    /// In a cluster: `order` rolls across its nodes through the cluster actor; the roll's
    /// ticket is the answer (progress in GET /v1/cluster).
    void ask_cluster(const std::string& route, msg::roll_order order);
    /// The optional "nodes" field (node names) of a model operation's body, or nullopt after the
    /// 400 that says why not (not an array of names, or no cluster to name nodes of).
    std::optional<std::vector<std::string>> nodes_field(const std::string& route,
                                                        const boost::json::object& o);

    // ---- cluster (handlers_cluster.cpp) ------------------------------------------------

    void do_cluster();

    // ---- the web page (handlers_web.cpp) -----------------------------------------------

    /// GET /: the page for a browser (Accept names text/html) unless web_ui is off; a line
    /// saying the server runs for any other client (probes, scripts).
    void do_web_page(const std::string& route, const request& req);
    /// GET /ui/NAME: one of the page's files, or 404.
    void do_web_asset(const std::string& route, const std::string& name);
    /// A 200 with one of the page's files and the page's security headers.
    void send_web_file(const std::string& route, const ui::web_asset& file);

    // ---- text (handlers_text.cpp) ------------------------------------------------------

    std::optional<std::string> model_field(const std::string& route, const boost::json::object& o);
    /// Asks admission (the alias's serving version) for `xs` from a helper actor; `done` runs
    /// with the answer on the strand, an error becomes the route's error reply naming `field`.
    template <class T, class... Ts>
    void ask_text(const std::string& route, const char* field, std::function<void(T)> done,
                  Ts... xs);
    void do_tokenize(const std::string& body);
    void do_detokenize(const std::string& body);
    void do_apply_template(const std::string& body);
    /// POST /v1/messages/count_tokens: the Messages request's prompt tokens, rendered by the
    /// model's chat template, without running it.
    void do_count_tokens(const std::string& body);

    // ---- state -------------------------------------------------------------------------

    server::impl& srv_;
    std::shared_ptr<request_registry> requests_;
    std::optional<call> call_;
    std::string client_key_;
    /// Who the request's client is for fair shares and quotas: its API key when keys are
    /// configured, otherwise its address (transport/client_address.hpp).
    std::string tenant_;
};

} // namespace bitnet::http
