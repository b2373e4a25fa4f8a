// One HTTP connection (class session) and the request in progress on it. The class is one
// object on one strand, but its members are defined by concern, one file each:
//   session.cpp             transport: reading under limits, plain responses, keep-alive, linger
//                           close, the disconnect watch, safely(), the drain cut
//   session_tls.cpp         HTTPS: telling a TLS hello from plain HTTP, the handshake, the clean
//                           refusal of plain HTTP on a TLS port, the TLS close
//   session_sse.cpp         the SSE writer: chunk framing, pings, the slow-reader cap, 499 aborts
//   session_dispatch.cpp    auth, routing and media type, then the switch on route_id
//   handlers_inference.cpp  inference routes: start, the sink's token/done/fail events
//   handlers_status.cpp     health, metrics, stats, models (a snapshot of the actors)
//   handlers_models.cpp     model management: load, rollback, unload, the crash hook, tickets
//   handlers_text.cpp       tokenize, detokenize
// Every handler runs under safely(): no exception leaves a session. Internal to http/.
#pragma once

#include "common/trace.hpp"
#include "http/api_render.hpp"
#include "http/connection_stream.hpp"
#include "http/errors.hpp"
#include "http/inference_sink.hpp"
#include "http/log_context.hpp"
#include "http/routes.hpp"
#include "http/server_impl.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
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

/// The inference routes' shapes: native (plain or streamed) and the two OpenAI ones.
/// The API family of an inference route; `messages` is Anthropic's (http/api_anthropic.hpp),
/// `responses` OpenAI's Responses API (http/api_responses.hpp).
enum class route_kind { native, native_stream, completions, chat, messages, responses };

class session : public std::enable_shared_from_this<session> {
public:
    using tcp = boost::asio::ip::tcp;
    using steady = std::chrono::steady_clock;
    using request = boost::beast::http::request<boost::beast::http::string_body>;

    session(tcp::socket&& s, server::impl& srv);
    ~session();
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    /// Registers for cut_all and starts reading on the strand.
    void run();

    /// Past max_connections: answer 503 + Retry-After without reading the request, then close
    /// (over TLS after the handshake, so the client can read it).
    void refuse_overloaded();

    /// The end of a drain whose deadline passed (on the strand): a request still in progress is
    /// cancelled (its sink dies, so the batcher frees its KV) and answered properly: a stream
    /// ends with an error event and finish_reason "cancelled", a plain request gets a 503
    /// `draining` error body. Idle connections are closed; nothing is cut mid-write.
    void cut();

private:
    /// The request in progress on this connection (one at a time: HTTP/1.1 without pipelining
    /// of responses).
    struct call {
        route_kind kind = route_kind::native;
        std::string route;
        std::string req_id;
        std::string model;
        bool stream = false;
        bool include_usage = false;
        bool want_logprobs = false;  ///< OpenAI routes: a logprobs object per token
        std::size_t text_offset = 0; ///< completions logprobs: where the next token's text starts
        /// Logprobs gathered for a non-streamed reply: chat entries, or the completions columns
        /// (tokens, token_logprobs, top_logprobs, text_offset), each element as JSON text.
        std::vector<std::string> lp_chat;
        std::array<std::vector<std::string>, 4> lp_cols;
        caf::actor sink;
        std::vector<msg::token_event> tokens;
        std::string text;
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
        bool echo = false;   ///< completions `echo`: the prompt comes back first
        bool echoed = false; ///< the prompt echo arrived (a moved request's second is dropped)
        /// The prompt as sent, when it was text: what `echo` gives back (token ids are echoed
        /// as the model's tokenizer renders them).
        std::optional<std::string> echo_text;
        bool tool_call = false; ///< chat: the text is a forced tool call, sent as tool_calls
        /// The one function a forced call names (its arguments alone are generated, and
        /// streamed as argument deltas); empty: the text is {"name","arguments"}.
        std::string tool_name;
        bool parallel_tool_calls = true; ///< the request's parallel_tool_calls (echoed)
        bool tool_opened = false;        ///< the stream sent the call's id and name
        bool head_sent = false; ///< messages: message_start went out (after the prompt's count)
        bool store = false;     ///< responses: keep the reply (http/response_store.hpp)
        bool native_logprobs = false; ///< native plain reply: `logprobs` N > 0 was asked
        bool token_logprob = true;    ///< native stream: token events carry the logprob
        std::string input_items;      ///< responses: the input as stored items (a JSON array)
        bool has_stops = false;       ///< the request had stop strings (Anthropic's stop_reason)
        std::uint32_t events = 0;     ///< Responses stream events sent (their sequence_number)
        /// n > 1 (OpenAI routes): what each choice gathered, and the choices still running.
        struct choice {
            std::string text;
            std::vector<std::string> lp_chat;
            std::array<std::vector<std::string>, 4> lp_cols;
            std::size_t text_offset = 0;
            std::uint32_t n_tokens = 0; ///< real tokens received (what a cut one counts)
            std::optional<msg::completion> done;
        };
        std::uint32_t n_choices = 1;
        std::vector<choice> choices;
    };

    // ---- transport (session.cpp) -------------------------------------------------------

    void answer_overloaded();
    void do_read();
    void on_read(boost::beast::error_code ec);

    /// Runs one piece of the session's work; an exception never leaves it (it would end the io
    /// thread and the process): the request in progress gets a 500 (or an error event when its
    /// stream has begun), the connection closes, and the log says which request it was.
    template <class F>
    void safely(const char* what, F&& f) noexcept {
        // The request's correlation fields, for JSON log lines only (text lines name the
        // request themselves): nothing is built per token event otherwise.
        const log_scope scope(json_logs() ? log_context() : log_fields{});
        try {
            f();
        } catch (const std::exception& e) {
            internal_failure(what, e.what());
        } catch (...) {
            internal_failure(what, "unknown exception");
        }
    }
    void internal_failure(const char* what, const char* why) noexcept;

    /// While a non-streamed reply is being generated nothing reads the socket: wait for it to
    /// become readable. Readable with nothing to read is the peer's FIN: the client is gone, so
    /// the request is cancelled (its KV freed) instead of generating for nobody.
    void watch_disconnect();
    void on_readable_while_busy();

    void send_error(const std::string& route, const api_error& e, const std::string& req_id);
    void send_json(const std::string& route, unsigned status, std::string body,
                   const std::string& req_id = "-", const std::string& server_timing = {},
                   std::uint32_t retry_after = 0, bool counted = false);
    void write_response(const std::string& route, bool counted);
    void linger_close();
    void linger_read();
    void close();

    // ---- HTTPS (session_tls.cpp) -------------------------------------------------------

    /// A TLS port's first step: read until the first bytes tell a TLS ClientHello from anything
    /// else (under the read timeout, so a client that says nothing does not hold a slot), then
    /// handshake with the current context, or refuse plain HTTP cleanly. Then read the request,
    /// or (`overloaded`) answer 503.
    void start_tls(bool overloaded);
    void on_tls_detected(boost::beast::error_code ec, bool is_tls, bool overloaded);
    void on_handshake(boost::beast::error_code ec, std::size_t used, bool overloaded);
    /// Plain HTTP on the TLS port: a 400 in plain HTTP saying the port speaks HTTPS, then close.
    void refuse_plain_http();
    /// The end of a TLS connection after its last response: close_notify, bounded, then close.
    void tls_linger_close();
    /// Under the disconnect watch, with bytes readable: whether they are the client leaving (an
    /// alert record, e.g. close_notify, or the FIN behind it) rather than a pipelined request.
    [[nodiscard]] bool tls_client_leaving();

    // ---- the SSE writer (session_sse.cpp) ----------------------------------------------

    void begin_stream();
    void arm_ping();
    void sse_data(const std::string& payload);
    void sse_event(const char* ev, const std::string& payload);
    void enqueue_chunk(const std::string& data);
    void enqueue_raw(std::string bytes);
    void do_write();
    void on_written(boost::beast::error_code ec);
    void end_stream();
    /// The client is gone (or too slow to keep up): cancel the sequence and close (499).
    void abort_call();

    // ---- routing (session_dispatch.cpp) ------------------------------------------------

    void handle(request req);

    // ---- CORS (session_cors.cpp) --------------------------------------------------------

    /// Reads the request's Origin: cors_origin_ is what the answer allows, or empty.
    void note_origin(const request& req);
    /// A CORS preflight (OPTIONS with Access-Control-Request-Method) on a known path, answered
    /// here when CORS is configured: true when it was.
    /// `route` is the matched pattern (the metrics label).
    bool answer_preflight(const request& req, const std::string& route, bool path_known);
    /// The CORS headers of the answer, as raw header lines (the SSE preamble) or on res_.
    [[nodiscard]] std::string cors_header_lines() const;
    void set_cors_headers();

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

    void start_inference(const std::string& route, route_kind kind, const std::string& body);
    [[nodiscard]] std::shared_ptr<sink_target> make_sink_target();
    void on_token(msg::token_event ev);
    void on_echo(msg::token_event ev);
    void on_done(msg::completion c);
    void on_fail(caf::error e);
    void stream_done_events(const msg::completion& c);

    // ---- Anthropic's Messages API (handlers_messages.cpp) ---------------------------------

    /// message_start, the first content block's start (text, or the forced call's tool_use)
    /// and a ping.
    void messages_stream_head();
    void stream_messages_token(const msg::token_event& ev);
    /// The block's stop, message_delta (stop_reason, usage), the drain error when cut, then
    /// message_stop.
    void messages_done_events(const msg::completion& c);
    /// The whole reply of a plain request.
    [[nodiscard]] std::string messages_body(const msg::completion& c) const;
    /// Whether the forced call in the text is whole (not cut by max_tokens, the deadline or a
    /// drain).
    [[nodiscard]] bool whole_call(const msg::completion& c) const;

    // ---- OpenAI's Responses API (handlers_responses.cpp) ----------------------------------

    /// One Responses stream event: `fields` (JSON members, "" or starting with ',') after its
    /// type and sequence number.
    void responses_event(const char* type, const std::string& fields);
    /// response.created, response.in_progress and the first output item's opening.
    void responses_stream_head();
    void stream_responses_token(const msg::token_event& ev);
    /// The item's .done events, then response.completed or response.incomplete (a drain cut:
    /// an error event and response.failed).
    void responses_done_events(const msg::completion& c);
    [[nodiscard]] std::string responses_body(const msg::completion& c) const;
    /// Keeps a finished Responses reply (its output items, each with its id) when the request
    /// asked to store it.
    void remember_response(const std::vector<std::pair<std::string, std::string>>& outputs) const;
    void stream_token(const msg::token_event& ev, bool lp);
    void gather_token(msg::token_event ev, bool lp);
    // n > 1 (handlers_choices.cpp): a choice's token, a choice's end, the request's end.
    void choice_token(const msg::token_event& ev, bool lp);
    void choice_done(msg::completion c);
    [[nodiscard]] chunk_head head() const;

    // ---- tracing (session_trace.cpp) ----------------------------------------------------

    /// The request's trace context (traceparent, or a new trace) and, when it is sampled and the
    /// route is not a probe or scrape, its HTTP server span.
    void begin_trace(const request& req, const route_match& m);
    /// The `traceresponse` header's value (W3C): the trace id and the server span's id; empty
    /// before the first request.
    [[nodiscard]] std::string traceresponse() const;
    /// An attribute on the server span (nothing when the request is not sampled).
    void trace_attr(std::string key, trace::value v);
    /// Ends the server span with the status the client saw (499: it left first); `error`
    /// marks it failed with that message.
    void end_trace(unsigned status, std::string_view request_id, const std::string& error = {});
    /// The GenAI request attributes on the server span (gen_ai.operation.name, .request.*),
    /// and the prompt text when otlp_include_text allows.
    void trace_request(const msg::generate_request& g, route_kind kind);
    /// The response's: usage, finish reasons (one per choice), the output text when allowed.
    /// `total` sums the choices' usage when there are several.
    void trace_usage(const std::vector<msg::completion>& choices,
                     const msg::completion* total = nullptr);
    /// " trace=<id>" for the request log's lines (empty without a trace).
    [[nodiscard]] std::string trace_note() const;
    /// The correlation fields of log lines written for the request in progress (JSON logs).
    [[nodiscard]] log_fields log_context() const;

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

    // ---- text (handlers_text.cpp) ------------------------------------------------------

    std::optional<std::string> model_field(const std::string& route, const boost::json::object& o);
    /// Asks admission (the alias's serving version) for `xs` from a helper actor; `done` runs
    /// with the answer on the strand, an error becomes the route's error reply naming `field`.
    template <class T, class... Ts>
    void ask_text(const std::string& route, const char* field, std::function<void(T)> done,
                  Ts... xs);
    void do_tokenize(const std::string& body);
    void do_detokenize(const std::string& body);
    /// POST /v1/messages/count_tokens: the Messages request's prompt tokens, rendered by the
    /// model's chat template, without running it.
    void do_count_tokens(const std::string& body);

    // ---- state -------------------------------------------------------------------------

    connection_stream stream_;
    server::impl& srv_;
    std::shared_ptr<session_registry> reg_;
    std::uint64_t reg_id_ = 0;
    boost::asio::steady_timer ping_;
    boost::beast::flat_buffer buf_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    boost::beast::http::response<boost::beast::http::string_body> res_;
    std::optional<call> call_;
    std::deque<std::string> out_;
    std::size_t queued_bytes_ = 0;
    bool writing_ = false;
    bool sse_ = false;
    bool stream_done_ = false;
    bool keep_alive_ = true;
    bool closed_ = false;
    bool watching_ = false;
    bool responding_ = false; ///< a plain response is being written
    std::string client_key_;
    /// The Access-Control-Allow-Origin this request's answer carries (session_cors.cpp); empty:
    /// none (no CORS configured, no Origin, or one not allowed).
    std::string cors_origin_;
    /// The request's trace: the caller's or a new trace id, with this server's span id.
    trace::context trace_;
    /// Its HTTP server span while the request runs (sampled requests only).
    std::optional<trace::span_record> span_;
    std::array<char, 4096> linger_buf_{};
    std::size_t linger_left_ = 0;
};

} // namespace bitnet::http
