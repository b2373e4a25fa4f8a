#include "http/server.hpp"

#include "http/api_json.hpp"
#include "http/errors.hpp"
#include "http/inference_sink.hpp"
#include "http/metrics.hpp"
#include "http/request_errors.hpp"
#include "http/routes.hpp"
#include "messages/errors.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <sys/socket.h>

namespace bitnet::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
namespace json = boost::json;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;

namespace {

std::string js(std::string_view s) {
    return json::serialize(json::value(json::string(s)));
}

std::string ms(std::int64_t us) {
    return fixed(static_cast<double>(us) / 1000.0, 3);
}

std::string openai_finish(const std::string& r) {
    return (r == "length" || r == "deadline") ? "length" : "stop";
}

std::string usage_json(const msg::completion& c) {
    return R"({"prompt_tokens":)" + std::to_string(c.prompt_tokens) + R"(,"completion_tokens":)" +
           std::to_string(c.completion_tokens) + R"(,"total_tokens":)" +
           std::to_string(c.prompt_tokens + c.completion_tokens) + "}";
}

std::string timings_json(const msg::completion& c) {
    const double tps = c.decode_us > 0 && c.completion_tokens > 1
                           ? (c.completion_tokens - 1) * 1e6 / static_cast<double>(c.decode_us)
                           : 0.0;
    return R"({"queue_ms":)" + ms(c.queue_us) + R"(,"prefill_ms":)" + ms(c.prefill_us) +
           R"(,"ttft_ms":)" + ms(c.ttft_us) + R"(,"decode_ms":)" + ms(c.decode_us) +
           R"(,"total_ms":)" + ms(c.total_us) + R"(,"tokens_per_second":)" + fixed(tps, 2) + "}";
}

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

enum class route_kind { native, native_stream, completions, chat };

/// `s` with every byte sequence that is not valid UTF-8 replaced by U+FFFD (a token's piece may be
/// half a character; JSON text must be whole ones, and the raw bytes go in "bytes").
std::string utf8_or_replacement(std::string_view s) {
    std::string out;
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80           ? 1
                        : (c >> 5) == 0x6  ? 2
                        : (c >> 4) == 0xE  ? 3
                        : (c >> 3) == 0x1E ? 4
                                           : 0;
        bool ok = n > 0 && i + n <= s.size() && !(n == 2 && c < 0xC2);
        for (std::size_t k = 1; ok && k < n; ++k)
            ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
        if (ok) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

json::array bytes_of(std::string_view s) {
    json::array a;
    for (unsigned char c : s)
        a.push_back(c);
    return a;
}

/// The sessions alive, for the end of a drain (cut_all); shared with every session so a session
/// that outlives the server (a sink actor may hold the last reference) still has it.
struct session_registry {
    std::mutex mu;
    std::uint64_t next = 1;
    std::unordered_map<std::uint64_t, std::function<void()>> cut; ///< posts a cut to its strand
    std::atomic<int> open{0};  ///< sessions whose socket is not closed yet
    std::atomic<int> calls{0}; ///< inference requests not yet answered in full
};

/// Counts one inference request in session_registry::calls for as long as it lives.
class call_count {
public:
    call_count() = default;
    explicit call_count(std::shared_ptr<session_registry> r)
        : reg_(std::move(r)) {
        ++reg_->calls;
    }
    call_count(call_count&& o) noexcept
        : reg_(std::move(o.reg_)) {}
    call_count& operator=(call_count&& o) noexcept {
        if (this != &o) {
            release();
            reg_ = std::move(o.reg_);
        }
        return *this;
    }
    call_count(const call_count&) = delete;
    call_count& operator=(const call_count&) = delete;
    ~call_count() { release(); }

private:
    void release() {
        if (reg_)
            --reg_->calls;
        reg_.reset();
    }
    std::shared_ptr<session_registry> reg_;
};

/// An io thread's loop. Sessions catch their own exceptions; this is the net under them: an
/// exception escaping a handler would otherwise end the thread and, uncaught, the process.
void run_io(net::io_context& ioc) {
    for (;;) {
        try {
            ioc.run();
            return;
        } catch (const std::exception& e) {
            spdlog::error("http io thread: an exception escaped a handler ({}); carrying on",
                          e.what());
        } catch (...) {
            spdlog::error("http io thread: an unknown exception escaped a handler; carrying on");
        }
    }
}

} // namespace

struct server::impl {
    caf::actor_system& sys;
    msg::admission_actor admission;
    server_options opt;
    net::io_context ioc;
    std::optional<tcp::acceptor> acceptor;
    std::vector<std::thread> threads;
    std::atomic<std::uint64_t> next_id{1};
    std::shared_ptr<metrics> metrics_ptr;
    metrics& m;
    steady::time_point started = steady::now();
    std::atomic<bool> warned_template{false};
    std::shared_ptr<session_registry> sessions = std::make_shared<session_registry>();
    std::atomic<bool> draining{false};
    std::optional<net::steady_timer> accept_backoff;
    steady::time_point last_accept_warning{};

    impl(caf::actor_system& s, msg::admission_actor a, server_options o)
        : sys(s)
        , admission(std::move(a))
        , opt(std::move(o))
        , metrics_ptr(opt.shared_metrics ? opt.shared_metrics : std::make_shared<metrics>())
        , m(*metrics_ptr) {
        m.build_info(opt.build.version, opt.build.git_sha);
    }

    void do_accept();
    void on_accept_error(const beast::error_code& ec);
    void refuse_connection(tcp::socket s);
};

namespace {

class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket&& s, server::impl& srv)
        : stream_(std::move(s))
        , srv_(srv)
        , reg_(srv.sessions)
        , ping_(stream_.get_executor()) {
        ++reg_->open;
    }
    ~session() {
        if (!closed_)
            --reg_->open;
        std::lock_guard lk(reg_->mu);
        reg_->cut.erase(reg_id_);
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    void run() {
        {
            std::lock_guard lk(reg_->mu);
            reg_id_ = reg_->next++;
            reg_->cut.emplace(reg_id_, [w = weak_from_this()] {
                if (auto s = w.lock())
                    net::post(s->stream_.get_executor(), [s] { s->cut(); });
            });
        }
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
    }

    /// Past max_connections: answer 503 + Retry-After without reading the request, then close.
    void refuse_overloaded() {
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
            self->srv_.m.rejected("too_many_connections");
            self->keep_alive_ = false;
            api_error e{503,
                        "overloaded",
                        "too_many_connections",
                        "the server has max_connections (" +
                            std::to_string(self->srv_.opt.max_connections) + ") connections open",
                        "",
                        "retry shortly, or against another replica",
                        1};
            self->send_error("-", e, "-");
        });
    }

    /// The end of a drain whose deadline passed (on the strand): a request still in progress is
    /// cancelled (its sink dies, so the batcher frees its KV) and answered properly: a stream
    /// ends with an error event and finish_reason "cancelled", a plain request gets a 503
    /// `draining` error body. Idle connections are closed; nothing is cut mid-write.
    void cut() {
        keep_alive_ = false;
        if (call_ && !call_->ended) {
            if (call_->sink)
                caf::anon_send_exit(call_->sink, caf::exit_reason::user_shutdown);
            call_->cut = true;
            msg::completion c;
            c.finish_reason = "cancelled";
            c.model = call_->model;
            c.prompt_tokens = call_->prompt_tokens;
            c.completion_tokens = static_cast<std::uint32_t>(call_->n_tokens);
            const auto us = [this](steady::time_point t) {
                return std::chrono::duration_cast<std::chrono::microseconds>(t - call_->start)
                    .count();
            };
            c.total_us = us(steady::now());
            if (call_->first_token != steady::time_point{}) {
                c.ttft_us = us(call_->first_token);
                c.decode_us = c.total_us - c.ttft_us;
            }
            return on_done(std::move(c));
        }
        if (!responding_ && out_.empty() && !call_)
            close();
    }

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
        std::uint32_t prompt_tokens = 0;
        std::size_t n_tokens = 0; ///< real tokens received
        bool ended = false;
        bool cut = false; ///< ended by the drain deadline (session::cut)
        call_count active;
    };

    void do_read() {
        parser_.emplace();
        parser_->body_limit(srv_.opt.max_body_bytes);
        parser_->header_limit(srv_.opt.max_header_bytes);
        // The parser buffers a chunked body's trailers whole and bounds them by nothing but this
        // buffer; body bytes pass through it in pieces, so the bound costs them nothing.
        buf_.max_size(srv_.opt.max_header_bytes + 1024);
        stream_.expires_after(srv_.opt.read_timeout);
        bhttp::async_read(
            stream_, buf_, *parser_,
            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec) {
        if (!ec)
            return safely("request", [&] { handle(parser_->release()); });
        if (auto refusal = read_refusal(ec, {srv_.opt.max_body_bytes, srv_.opt.max_header_bytes})) {
            // The rest of what the client sent cannot be framed: answer, then close.
            keep_alive_ = false;
            return send_error("-", *refusal, "-");
        }
        close(); // the client went away or timed out: nobody to answer
    }

    /// Runs one piece of the session's work; an exception never leaves it (it would end the io
    /// thread and the process): the request in progress gets a 500 (or an error event when its
    /// stream has begun), the connection closes, and the log says which request it was.
    template <class F>
    void safely(const char* what, F&& f) noexcept {
        try {
            f();
        } catch (const std::exception& e) {
            internal_failure(what, e.what());
        } catch (...) {
            internal_failure(what, "unknown exception");
        }
    }

    void internal_failure(const char* what, const char* why) noexcept {
        try {
            const auto id = call_ ? call_->req_id : "-";
            spdlog::error("{}: internal error while handling the {}: {}", id, what, why);
            keep_alive_ = false;
            api_error e{500,
                        "server_error",
                        "internal_error",
                        "the server failed while handling this request",
                        "",
                        "",
                        0};
            if (call_ && !call_->ended && sse_) {
                srv_.m.request_done(call_->route, 500, 0);
                sse_event("error", error_body(e, call_->req_id));
                return end_stream();
            }
            if (call_ && call_->sink)
                caf::anon_send_exit(call_->sink, caf::exit_reason::user_shutdown);
            if (!responding_ && !sse_ && !closed_) {
                auto route = call_ ? call_->route : std::string("-");
                call_.reset();
                return send_error(route, e, id);
            }
            close();
        } catch (...) {
            close();
        }
    }

    /// The key in `Authorization: Bearer <key>`, empty when none.
    static std::string bearer(const bhttp::request<bhttp::string_body>& req) {
        const auto auth = std::string(req[bhttp::field::authorization]);
        return auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : std::string{};
    }

    static bool listed(const std::vector<std::string>& keys, const std::string& k) {
        return !k.empty() && std::find(keys.begin(), keys.end(), k) != keys.end();
    }

    void handle(bhttp::request<bhttp::string_body> req) {
        keep_alive_ = req.keep_alive();
        std::string target(req.target());
        if (auto q = target.find('?'); q != std::string::npos)
            target.resize(q);
        const auto m = match_route(req.method_string(), target, srv_.opt.test_hooks);
        const std::string route(m.label);
        if (m.need != role::open) {
            const auto key = bearer(req);
            client_key_ = key; // the per-key quota's bucket (admission)
            if (auto refusal = authorize(m.need, key))
                return send_error(route, *refusal, "-");
        }
        if (!m.found) {
            if (m.path_known)
                return send_error(route,
                                  status_error(405, std::string(req.method_string()) +
                                                        " is not allowed on " + target),
                                  "-");
            return send_error(route, status_error(404, "no route " + target), "-");
        }
        dispatch(*m.found, m.alias, route, req);
    }

    /// Why a caller holding `key` may not use a route that needs `need`, or nothing.
    std::optional<api_error> authorize(role need, const std::string& key) const {
        const auto& keys = srv_.opt.api_keys;
        const auto& admins = srv_.opt.admin_keys;
        if (need == role::admin) {
            if (admins.empty()) {
                if (srv_.opt.admin_open)
                    return std::nullopt;
                // Model management is a role of its own: no inference key ever grants it.
                auto e = status_error(403, "model management is disabled: this server has no "
                                           "admin key configured");
                e.type = "authentication_error";
                e.code = "invalid_api_key";
                e.suggestion = "start the server with admin_api_keys (--admin-key), or "
                               "admin_open 1 for local use";
                return e;
            }
            if (key.empty())
                return status_error(401, "missing API key");
            if (!listed(admins, key)) {
                auto e = status_error(401, "this route needs the admin key");
                e.status = 403;
                e.suggestion = "send an admin key (admin_api_keys) in Authorization: Bearer";
                return e;
            }
            return std::nullopt;
        }
        if (!keys.empty() && !listed(keys, key) && !listed(admins, key))
            return status_error(401, key.empty() ? "missing API key" : "wrong API key");
        return std::nullopt;
    }

    /// Runs the route the table matched.
    void dispatch(const route& r, const std::string& alias, const std::string& label,
                  const bhttp::request<bhttp::string_body>& req) {
        const bool json_body =
            r.method == "POST" && r.id != route_id::model_rollback && r.id != route_id::model_crash;
        if (json_body && r.id != route_id::model_load && !json_type(req))
            return send_error(label, status_error(415, "send Content-Type: application/json"), "-");
        switch (r.id) {
        case route_id::health_live:
            return send_json(label, 200, R"({"status":"ok"})");
        case route_id::health_ready:
        case route_id::health:
            return do_health(label);
        case route_id::metrics:
            return do_metrics();
        case route_id::stats:
            return do_stats();
        case route_id::models:
            return do_models({});
        case route_id::model:
            return do_models(alias);
        case route_id::model_load:
            return do_load(req.body());
        case route_id::model_rollback:
            return do_model_op("rollback", alias);
        case route_id::model_crash:
            return do_model_op("crash", alias);
        case route_id::model_unload:
            return do_model_op("unload", alias);
        case route_id::tokenize:
            return do_tokenize(req.body());
        case route_id::detokenize:
            return do_detokenize(req.body());
        case route_id::inference:
            return start_inference(label, route_kind::native, req.body());
        case route_id::inference_stream:
            return start_inference(label, route_kind::native_stream, req.body());
        case route_id::completions:
            return start_inference(label, route_kind::completions, req.body());
        case route_id::chat:
            return start_inference(label, route_kind::chat, req.body());
        }
    }

    /// No Content-Type, or a media type of application/json (case-insensitive, parameters such
    /// as charset allowed).
    static bool json_type(const bhttp::request<bhttp::string_body>& req) {
        std::string_view ctype = req[bhttp::field::content_type];
        ctype = ctype.substr(0, ctype.find(';'));
        while (!ctype.empty() && (ctype.back() == ' ' || ctype.back() == '\t'))
            ctype.remove_suffix(1);
        while (!ctype.empty() && (ctype.front() == ' ' || ctype.front() == '\t'))
            ctype.remove_prefix(1);
        return ctype.empty() || beast::iequals(ctype, "application/json");
    }

    void start_inference(const std::string& route, route_kind kind, const std::string& body) {
        const auto id = srv_.next_id.fetch_add(1);
        call c;
        c.kind = kind;
        c.route = route;
        c.req_id = "req-" + std::to_string(id);
        const auto api = kind == route_kind::chat          ? api_kind::chat
                         : kind == route_kind::completions ? api_kind::completions
                                                           : api_kind::native;
        auto parsed = parse_inference(body, api);
        if (auto* e = std::get_if<api_error>(&parsed))
            return send_error(route, *e, c.req_id);
        auto& in = std::get<inference_input>(parsed);
        c.model = in.model.empty() ? srv_.opt.default_model : in.model;
        c.stream = kind == route_kind::native_stream || in.stream;
        c.include_usage = in.include_usage;

        msg::generate_request g;
        g.id = id;
        g.model = c.model;
        const auto& codec = srv_.opt.text;
        if (in.prompt_is_ids) {
            g.prompt = std::move(in.prompt_ids);
        } else {
            const char* field = kind == route_kind::chat ? "messages" : "prompt";
            if (!codec.tokenize)
                return send_error(route,
                                  invalid_value(field, "this server has no tokenizer for text "
                                                       "prompts; send the prompt as token ids"),
                                  c.req_id);
            std::string text = in.prompt_text;
            if (kind == route_kind::chat) {
                const auto tmpl = codec.chat_template_of ? codec.chat_template_of(c.model)
                                                         : chat_template::bitnet;
                text = render_chat(in.messages, tmpl);
            }
            // Control tokens written in the prompt (the chat markers) become their ids, as in
            // llama.cpp's server.
            auto ids = codec.tokenize(c.model, text, in.add_bos, true);
            if (!ids)
                return send_error(route, to_api_error(ids.error(), 0, field), c.req_id);
            if (ids->empty())
                return send_error(route, invalid_value(field, "the prompt has no tokens"),
                                  c.req_id);
            g.prompt = std::move(*ids);
        }
        c.want_logprobs =
            in.want_logprobs && kind != route_kind::native && kind != route_kind::native_stream;
        g.max_tokens = in.max_tokens;
        g.params = in.params;
        g.stop = std::move(in.stop);
        g.stop_token_ids = std::move(in.stop_token_ids);
        g.prio = in.prio;
        g.timeout_ms = in.timeout_ms;
        g.client_key = client_key_;
        c.prompt_tokens = static_cast<std::uint32_t>(g.prompt.size());
        c.active = call_count(srv_.sessions);
        g.t_received_us =
            std::chrono::duration_cast<std::chrono::microseconds>(steady::now().time_since_epoch())
                .count();

        auto t = std::make_shared<sink_target>();
        auto self = shared_from_this();
        auto ex = stream_.get_executor();
        t->on_admitted = [self, ex] {
            net::post(ex, [self] {
                self->safely("admission", [&] {
                    if (self->call_ && !self->call_->ended && self->call_->stream && !self->sse_)
                        self->begin_stream();
                });
            });
        };
        t->on_token = [self, ex](msg::token_event ev) {
            net::post(ex, [self, ev = std::move(ev)]() mutable {
                self->safely("token", [&] { self->on_token(std::move(ev)); });
            });
        };
        t->on_done = [self, ex](msg::completion done) {
            net::post(ex, [self, done = std::move(done)]() mutable {
                self->safely("completion", [&] { self->on_done(std::move(done)); });
            });
        };
        t->on_fail = [self, ex](caf::error e) {
            net::post(ex, [self, e = std::move(e)]() mutable {
                self->safely("failure", [&] { self->on_fail(std::move(e)); });
            });
        };
        call_ = std::move(c);
        // A stream's headers wait for admission's answer, so a refusal (429, 503) is a real
        // HTTP status with Retry-After, which client libraries act on.
        watch_disconnect();
        call_->sink = spawn_sink(srv_.sys, srv_.admission, std::move(g), std::move(t));
    }

    /// While a non-streamed reply is being generated nothing reads the socket: wait for it to
    /// become readable. Readable with nothing to read is the peer's FIN: the client is gone, so
    /// the request is cancelled (its KV freed) instead of generating for nobody.
    void watch_disconnect() {
        stream_.expires_never(); // a long generation must not trip the read timeout
        watching_ = true;
        stream_.socket().async_wait(tcp::socket::wait_read,
                                    [self = shared_from_this()](beast::error_code ec) {
                                        self->watching_ = false;
                                        if (ec || !self->call_ || self->call_->ended || self->sse_)
                                            return;
                                        self->on_readable_while_busy();
                                    });
    }

    /// A readiness event is only a hint: the reactor may report one left over from the request
    /// it already read (edge-triggered epoll queues it before the request's bytes were taken
    /// speculatively), so "readable with nothing to read" is not proof of a FIN. Peek: 0 bytes
    /// is the peer's FIN, EAGAIN was a stale event (watch again), data is a pipelined request
    /// (the client is still there). Trusting the stale event dropped about one connection in a
    /// thousand without an answer.
    void on_readable_while_busy() {
        char byte = 0;
        const auto n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0)
            return;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            spdlog::debug("{}: stale readiness event while the reply is generated; watching again",
                          call_->req_id);
            return watch_disconnect();
        }
        abort_call();
    }

    // ---- streaming ----------------------------------------------------------------------

    void begin_stream() {
        if (watching_) {
            // The stream's own writes now notice a gone client.
            beast::error_code ec;
            stream_.socket().cancel(ec);
            watching_ = false;
        }
        sse_ = true;
        std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                           "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
                           "X-Request-Id: " +
                           call_->req_id + "\r\nTransfer-Encoding: chunked\r\n\r\n";
        enqueue_raw(std::move(head));
        if (call_->kind == route_kind::chat)
            sse_data(chat_chunk(R"({"role":"assistant","content":""})", "null"));
        arm_ping();
    }

    void arm_ping() {
        ping_.expires_after(srv_.opt.sse_ping);
        ping_.async_wait([self = shared_from_this()](beast::error_code ec) {
            if (ec || !self->sse_ || !self->call_ || self->call_->ended)
                return;
            self->enqueue_chunk(": ping\n\n");
            self->arm_ping();
        });
    }

    std::string chat_chunk(const std::string& delta, const std::string& finish,
                           const std::string& logprobs = "null") {
        return R"({"id":"chatcmpl-)" + call_->req_id.substr(4) +
               R"(","object":"chat.completion.chunk","created":)" + std::to_string(call_->created) +
               R"(,"model":)" + js(call_->model) +
               R"(,"system_fingerprint":"bitnet-serve","choices":[{"index":0,"delta":)" + delta +
               R"(,"logprobs":)" + logprobs + R"(,"finish_reason":)" + finish +
               R"(}],"usage":null})";
    }

    std::string completion_chunk(const std::string& text, const std::string& finish,
                                 const std::string& logprobs = "null") {
        return R"({"id":"cmpl-)" + call_->req_id.substr(4) +
               R"(","object":"text_completion","created":)" + std::to_string(call_->created) +
               R"(,"model":)" + js(call_->model) + R"(,"choices":[{"text":)" + js(text) +
               R"(,"index":0,"logprobs":)" + logprobs + R"(,"finish_reason":)" + finish +
               R"(}],"usage":null})";
    }

    void sse_data(const std::string& payload) { enqueue_chunk("data: " + payload + "\n\n"); }
    void sse_event(const char* ev, const std::string& payload) {
        enqueue_chunk(std::string("event: ") + ev + "\ndata: " + payload + "\n\n");
    }

    void enqueue_chunk(const std::string& data) {
        char hex[32];
        std::snprintf(hex, sizeof hex, "%zx\r\n", data.size());
        enqueue_raw(hex + data + "\r\n");
    }

    void enqueue_raw(std::string bytes) {
        if (closed_)
            return;
        queued_bytes_ += bytes.size();
        if (queued_bytes_ > srv_.opt.sse_buffer_bytes) {
            // A reader this slow would make us buffer without limit: cancel it instead.
            spdlog::warn("{}: SSE reader too slow ({} bytes unsent), cancelling",
                         call_ ? call_->req_id : "-", queued_bytes_);
            return abort_call();
        }
        out_.push_back(std::move(bytes));
        do_write();
    }

    void do_write() {
        if (writing_ || out_.empty() || closed_)
            return;
        writing_ = true;
        stream_.expires_after(srv_.opt.write_timeout);
        net::async_write(stream_, net::buffer(out_.front()),
                         [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             self->on_written(ec);
                         });
    }

    void on_written(beast::error_code ec) {
        writing_ = false;
        if (ec)
            return abort_call(); // client gone: cancel the sequence
        queued_bytes_ -= out_.front().size();
        out_.pop_front();
        if (!out_.empty())
            return do_write();
        if (stream_done_) {
            stream_done_ = false;
            sse_ = false;
            call_.reset();
            if (keep_alive_)
                do_read();
            else
                close();
        }
    }

    void end_stream() {
        call_->ended = true;
        ping_.cancel();
        stream_done_ = true;
        enqueue_raw("0\r\n\r\n");
    }

    /// The client is gone (or too slow to keep up): cancel the sequence (its sink dies, the
    /// batcher frees its KV) and close. Counted and logged as 499, the status nobody receives.
    void abort_call() {
        if (call_ && !call_->ended) {
            if (call_->sink)
                caf::anon_send_exit(call_->sink, caf::exit_reason::user_shutdown);
            call_->ended = true;
            const auto secs = std::chrono::duration<double>(steady::now() - call_->start).count();
            srv_.m.request_done(call_->route, 499, secs);
            spdlog::info("{} {} {} 499 client_closed tokens_sent={} total_ms={}", call_->req_id,
                         call_->route, sse_ ? "stream" : "plain", call_->n_tokens,
                         fixed(secs * 1000.0, 3));
        }
        ping_.cancel();
        close();
    }

    // ---- logprobs (OpenAI shapes) --------------------------------------------------------

    std::string piece_of(msg::token_id id) const {
        return srv_.opt.text.piece ? srv_.opt.text.piece(call_->model, id) : std::string{};
    }

    /// `"token","logprob","bytes"` of one token (no braces).
    std::string lp_fields(msg::token_id id, float lp) const {
        const auto p = piece_of(id);
        return R"("token":)" + js(utf8_or_replacement(p)) + R"(,"logprob":)" + fixed(lp, 6) +
               R"(,"bytes":)" + json::serialize(bytes_of(p));
    }

    /// Chat: `{"token","logprob","bytes","top_logprobs":[...]}` for one generated token.
    std::string chat_lp(const msg::token_event& ev) const {
        std::string out = "{" + lp_fields(ev.token, ev.logprob) + R"(,"top_logprobs":[)";
        for (std::size_t i = 0; i < ev.top_tokens.size() && i < ev.top_logprobs.size(); ++i)
            out += (i ? ",{" : "{") + lp_fields(ev.top_tokens[i], ev.top_logprobs[i]) + "}";
        return out + "]}";
    }

    /// Completions: the four column values of one token.
    std::array<std::string, 4> completion_lp(const msg::token_event& ev) {
        const auto p = piece_of(ev.token);
        std::string top = "{";
        for (std::size_t i = 0; i < ev.top_tokens.size() && i < ev.top_logprobs.size(); ++i)
            top += (i ? "," : "") + js(utf8_or_replacement(piece_of(ev.top_tokens[i]))) + ":" +
                   fixed(ev.top_logprobs[i], 6);
        top += "}";
        std::array<std::string, 4> cols{js(utf8_or_replacement(p)), fixed(ev.logprob, 6), top,
                                        std::to_string(call_->text_offset)};
        call_->text_offset += ev.text.size();
        return cols;
    }

    static std::string join(const std::vector<std::string>& xs) {
        std::string out = "[";
        for (std::size_t i = 0; i < xs.size(); ++i)
            out += (i ? "," : "") + xs[i];
        return out + "]";
    }

    std::string completion_lp_object(const std::array<std::vector<std::string>, 4>& cols) const {
        return R"({"tokens":)" + join(cols[0]) + R"(,"token_logprobs":)" + join(cols[1]) +
               R"(,"top_logprobs":)" + join(cols[2]) + R"(,"text_offset":)" + join(cols[3]) + "}";
    }

    // ---- events from the sink (on the strand) -------------------------------------------

    void on_token(msg::token_event ev) {
        if (!call_ || call_->ended)
            return;
        if (call_->stream && !sse_)
            begin_stream(); // admission's answer is posted first; this is only a safety net
        const auto now = steady::now();
        const bool real_token = ev.token >= 0; // < 0: held-back text released at the end
        if (real_token && call_->last_token != steady::time_point{})
            srv_.m.inter_token(std::chrono::duration<double>(now - call_->last_token).count());
        if (real_token) {
            call_->last_token = now;
            if (call_->n_tokens++ == 0) {
                call_->first_token = now;
                srv_.m.prompt_processed(call_->prompt_tokens);
            }
            srv_.m.token_generated();
        }
        const bool lp = call_->want_logprobs && real_token;
        if (!sse_) {
            if (lp && call_->kind == route_kind::chat)
                call_->lp_chat.push_back(chat_lp(ev));
            if (lp && call_->kind == route_kind::completions) {
                auto cols = completion_lp(ev);
                for (std::size_t i = 0; i < 4; ++i)
                    call_->lp_cols[i].push_back(std::move(cols[i]));
            }
            call_->text += ev.text;
            if (real_token)
                call_->tokens.push_back(std::move(ev));
            return;
        }
        call_->text += ev.text;
        switch (call_->kind) {
        case route_kind::native:
        case route_kind::native_stream:
            sse_event("token", R"({"index":)" + std::to_string(ev.index) + R"(,"token_id":)" +
                                   (real_token ? std::to_string(ev.token) : "null") +
                                   R"(,"text":)" + js(ev.text) +
                                   (real_token ? R"(,"logprob":)" + fixed(ev.logprob, 6) : "") +
                                   "}");
            break;
        case route_kind::chat:
            if (!ev.text.empty() || lp)
                sse_data(chat_chunk(R"({"content":)" + js(ev.text) + "}", "null",
                                    lp ? R"({"content":[)" + chat_lp(ev) + "]}" : "null"));
            break;
        case route_kind::completions:
            if (!ev.text.empty() || lp) {
                std::string lps = "null";
                if (lp) {
                    auto cols = completion_lp(ev);
                    std::array<std::vector<std::string>, 4> one;
                    for (std::size_t i = 0; i < 4; ++i)
                        one[i].push_back(std::move(cols[i]));
                    lps = completion_lp_object(one);
                }
                sse_data(completion_chunk(ev.text, "null", lps));
            }
            break;
        }
    }

    /// What a request cut by the drain deadline is told (HTTP-API.md: 503 `draining`).
    static api_error drain_error() {
        return {503,
                "overloaded",
                "draining",
                "the server is shutting down and its drain timeout passed before this request "
                "finished; generation was cancelled",
                "",
                "retry against another replica",
                1};
    }

    void on_done(msg::completion c) {
        if (!call_ || call_->ended)
            return;
        if (call_->cut && !sse_) {
            // Nothing was sent yet: a proper error reply (send_error counts and logs it).
            auto route = call_->route;
            auto req_id = call_->req_id;
            call_.reset();
            return send_error(route, drain_error(), req_id);
        }
        if (call_->stream && !sse_)
            begin_stream();
        srv_.m.completion(c);
        srv_.m.request_done(call_->route, 200,
                            std::chrono::duration<double>(steady::now() - call_->start).count());
        // The request log: one line per inference request.
        spdlog::info("{} {} {} 200 model={} finish={} prompt_tokens={} completion_tokens={} "
                     "queue_ms={} ttft_ms={} total_ms={}",
                     call_->req_id, call_->route, sse_ ? "stream" : "plain", c.model,
                     c.finish_reason, c.prompt_tokens, c.completion_tokens, ms(c.queue_us),
                     ms(c.ttft_us), ms(c.total_us));
        if (sse_) {
            switch (call_->kind) {
            case route_kind::native:
            case route_kind::native_stream:
                if (call_->cut)
                    sse_event("error", error_body(drain_error(), call_->req_id));
                sse_event("done", R"({"finish_reason":)" + js(c.finish_reason) + R"(,"usage":)" +
                                      usage_json(c) + R"(,"timings":)" + timings_json(c) +
                                      R"(,"model_version":)" + js(c.model_version) + "}");
                break;
            case route_kind::chat:
                sse_data(chat_chunk(
                    "{}", js(call_->cut ? c.finish_reason : openai_finish(c.finish_reason))));
                if (call_->include_usage)
                    sse_data(R"({"id":"chatcmpl-)" + call_->req_id.substr(4) +
                             R"(","object":"chat.completion.chunk","created":)" +
                             std::to_string(call_->created) + R"(,"model":)" + js(call_->model) +
                             R"(,"system_fingerprint":"bitnet-serve","choices":[],"usage":)" +
                             usage_json(c) + "}");
                if (call_->cut)
                    sse_data(error_body(drain_error(), call_->req_id));
                sse_data("[DONE]");
                break;
            case route_kind::completions:
                sse_data(completion_chunk(
                    "", js(call_->cut ? c.finish_reason : openai_finish(c.finish_reason))));
                if (call_->include_usage)
                    sse_data(R"({"id":"cmpl-)" + call_->req_id.substr(4) +
                             R"(","object":"text_completion","created":)" +
                             std::to_string(call_->created) + R"(,"model":)" + js(call_->model) +
                             R"(,"choices":[],"usage":)" + usage_json(c) + "}");
                if (call_->cut)
                    sse_data(error_body(drain_error(), call_->req_id));
                sse_data("[DONE]");
                break;
            }
            return end_stream();
        }
        std::string body;
        const auto id_num = call_->req_id.substr(4);
        if (call_->kind == route_kind::native) {
            std::string toks = "[";
            for (std::size_t i = 0; i < call_->tokens.size(); ++i)
                toks += (i ? "," : "") + std::to_string(call_->tokens[i].token);
            toks += "]";
            body = R"({"id":)" + js(call_->req_id) + R"(,"model":)" + js(c.model) +
                   R"(,"model_version":)" + js(c.model_version) + R"(,"text":)" + js(call_->text) +
                   R"(,"tokens":)" + toks + R"(,"finish_reason":)" + js(c.finish_reason) +
                   R"(,"usage":)" + usage_json(c) + R"(,"timings":)" + timings_json(c) + "}";
        } else if (call_->kind == route_kind::chat) {
            body =
                R"({"id":"chatcmpl-)" + id_num + R"(","object":"chat.completion","created":)" +
                std::to_string(call_->created) + R"(,"model":)" + js(c.model) +
                R"(,"system_fingerprint":"bitnet-serve","choices":[{"index":0,"message":{"role":"assistant","content":)" +
                js(call_->text) + R"(},"logprobs":)" +
                (call_->want_logprobs ? R"({"content":)" + join(call_->lp_chat) + "}" : "null") +
                R"(,"finish_reason":)" + js(openai_finish(c.finish_reason)) + R"(}],"usage":)" +
                usage_json(c) + "}";
        } else {
            body = R"({"id":"cmpl-)" + id_num + R"(","object":"text_completion","created":)" +
                   std::to_string(call_->created) + R"(,"model":)" + js(c.model) +
                   R"(,"choices":[{"text":)" + js(call_->text) + R"(,"index":0,"logprobs":)" +
                   (call_->want_logprobs ? completion_lp_object(call_->lp_cols) : "null") +
                   R"(,"finish_reason":)" + js(openai_finish(c.finish_reason)) + R"(}],"usage":)" +
                   usage_json(c) + "}";
        }
        const auto server_timing =
            "queue;dur=" + ms(c.queue_us) + ", prefill;dur=" + ms(c.prefill_us) +
            ", decode;dur=" + ms(c.decode_us) + ", total;dur=" + ms(c.total_us);
        auto route = call_->route;
        auto req_id = call_->req_id;
        call_.reset();
        send_json(route, 200, std::move(body), req_id, server_timing, 0, /*counted=*/true);
    }

    void on_fail(caf::error e) {
        if (!call_ || call_->ended)
            return;
        const auto err = msg::from_caf_error(e);
        auto api = to_api_error(err, msg::retry_after_of(e));
        if (err.value() == errc::queue_full)
            srv_.m.rejected(api.code);
        else if (err.value() == errc::quota_exceeded)
            srv_.m.rejected("quota");
        spdlog::info("{} {} {} {} code={} message={}", call_->req_id, call_->route,
                     sse_ ? "stream" : "plain", api.status, api.code, api.message);
        if (sse_) {
            srv_.m.request_done(call_->route, api.status, 0);
            if (call_->kind == route_kind::native || call_->kind == route_kind::native_stream)
                sse_event("error", error_body(api, call_->req_id));
            else {
                sse_data(error_body(api, call_->req_id));
                sse_data("[DONE]");
            }
            return end_stream();
        }
        auto route = call_->route;
        auto req_id = call_->req_id;
        call_.reset();
        send_error(route, api, req_id);
    }

    // ---- operational routes -------------------------------------------------------------

    /// What the operational routes need from the actors, gathered off the asio threads.
    struct snapshot {
        bool ready = false;
        std::string ready_reason;
        bool admission_up = false;
        bool supervisor_up = false;
        std::vector<msg::batcher_stats> stats;
        std::vector<msg::model_status> models;
    };

    /// Asks admission (readiness, queue stats) and the supervisor (model states), then runs `f`
    /// on this connection's strand. A helper actor does the asking; no asio thread waits.
    void with_snapshot(std::function<void(snapshot)> f) {
        auto self = shared_from_this();
        auto ex = stream_.get_executor();
        auto snap = std::make_shared<snapshot>();
        auto finish = [ex, f, snap, self] {
            net::post(ex,
                      [f, snap, self] { self->safely("status", [&] { f(std::move(*snap)); }); });
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

    void do_health(const std::string& target) {
        with_snapshot([self = shared_from_this(), target](snapshot snap) {
            self->health_reply(target, snap);
        });
    }

    void health_reply(const std::string& target, const snapshot& snap) {
        const auto uptime =
            std::chrono::duration_cast<std::chrono::seconds>(steady::now() - srv_.started).count();
        const auto& b = srv_.opt.build;
        json::object build{{"git_sha", b.git_sha},
                           {"compiler", b.compiler},
                           {"flags", b.flags},
                           {"cpu_features", b.cpu_features}};
        json::array models, executors;
        for (const auto& m : snap.models) {
            json::object mo{{"alias", m.alias},
                            {"version", m.version},
                            {"state", m.state},
                            {"restarts", m.restarts}};
            if (!m.failure.empty())
                mo["failure"] = m.failure;
            models.push_back(std::move(mo));
            if (m.state == "ready")
                executors.push_back({{"model", m.alias},
                                     {"device", m.info.device},
                                     {"device_reason", m.info.device_reason},
                                     {"engine", m.info.describe}});
        }
        json::object components{
            {"admission",
             {{"status", snap.admission_up ? (snap.ready ? "ready" : "not_ready") : "down"},
              {"reason", snap.ready_reason}}},
            {"supervisor",
             {{"status", srv_.opt.supervisor ? (snap.supervisor_up ? "up" : "down") : "absent"}}},
            {"models", std::move(models)},
            {"executors", std::move(executors)}};
        json::object root{{"status", snap.ready ? "ok" : "unavailable"},
                          {"reason", snap.ready_reason},
                          {"version", b.version},
                          {"build", std::move(build)},
                          {"uptime_s", uptime},
                          {"components", std::move(components)}};
        send_json(target, snap.ready ? 200 : 503, json::serialize(root), "-", {},
                  snap.ready ? 0 : 1);
    }

    void do_metrics() {
        with_snapshot([self = shared_from_this()](snapshot snap) {
            self->srv_.m.queues(snap.stats);
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

    static json::object stats_json(const msg::batcher_stats& x) {
        return {
            {"model", x.model},
            {"waiting", {{"high", x.waiting[0]}, {"normal", x.waiting[1]}, {"low", x.waiting[2]}}},
            {"waiting_prompt_tokens", x.waiting_prompt_tokens},
            {"running", x.running},
            {"kv_blocks_used", x.kv_blocks_used},
            {"kv_blocks_total", x.kv_blocks_total},
            {"steps", x.steps},
            {"preemptions", x.preemptions},
            {"finished", x.finished}};
    }

    void do_stats() {
        with_snapshot([self = shared_from_this()](snapshot snap) {
            json::array models;
            for (const auto& x : snap.stats)
                models.push_back(stats_json(x));
            const auto live = self->srv_.m.live();
            json::object rejects;
            for (const auto& [reason, n] : live.rejects)
                rejects[reason] = n;
            json::object root;
            root["models"] = std::move(models);
            root["rejects"] = std::move(rejects);
            // Rates and the mean as plain decimals (Boost.JSON would print 2.5E-1).
            auto body = json::serialize(root);
            body.pop_back();
            body += R"(,"batch_size":{"steps":)" + std::to_string(live.steps) + R"(,"mean":)" +
                    fixed(live.batch_mean, 2) + R"(,"p50":)" + std::to_string(live.batch_p50) +
                    R"(,"p90":)" + std::to_string(live.batch_p90) + R"(,"p99":)" +
                    std::to_string(live.batch_p99) + R"(,"max":)" + std::to_string(live.batch_max) +
                    R"(},"tokens_per_second":{"prompt":{"10s":)" + fixed(live.prompt_tps_10s, 2) +
                    R"(,"60s":)" + fixed(live.prompt_tps_60s, 2) + R"(},"generated":{"10s":)" +
                    fixed(live.generated_tps_10s, 2) + R"(,"60s":)" +
                    fixed(live.generated_tps_60s, 2) + "}}}";
            self->send_json("/v1/stats", 200, std::move(body));
        });
    }

    /// The OpenAI model entry plus the contract's extras.
    static json::object model_json(const msg::model_status& m) {
        const auto& i = m.info;
        const bool ready = m.state == "ready";
        json::object o{
            {"id", m.alias},
            {"object", "model"},
            {"created", m.loaded_at > 0 ? m.loaded_at : unix_now()},
            {"owned_by", "bitnet-serve"},
            {"version", m.version},
            {"state", m.state},
            {"format", ready ? json::value(i.format) : json::value(nullptr)},
            {"architecture", ready ? json::value(i.architecture) : json::value(nullptr)},
            {"parameters", ready ? json::value(i.parameters) : json::value(nullptr)},
            {"context_length", ready ? json::value(i.n_ctx) : json::value(nullptr)},
            {"device", ready ? json::value(i.device) : json::value(nullptr)},
            {"file_sha256",
             m.file_sha256.empty() ? json::value(nullptr) : json::value(m.file_sha256)},
            {"path", m.path.empty() ? json::value(nullptr) : json::value(m.path)},
            {"loaded_at", m.loaded_at > 0 ? json::value(m.loaded_at) : json::value(nullptr)},
            {"previous_version",
             m.previous_version.empty() ? json::value(nullptr) : json::value(m.previous_version)}};
        if (!m.failure.empty())
            o["failure"] = m.failure;
        return o;
    }

    static json::object version_json(const msg::version_status& v) {
        const bool known = !v.info.format.empty();
        json::object o{
            {"version", v.version},
            {"state", v.state},
            {"path", v.path},
            {"file_sha256",
             v.file_sha256.empty() ? json::value(nullptr) : json::value(v.file_sha256)},
            {"loaded_at", v.loaded_at > 0 ? json::value(v.loaded_at) : json::value(nullptr)},
            {"format", known ? json::value(v.info.format) : json::value(nullptr)},
            {"device", known ? json::value(v.info.device) : json::value(nullptr)},
            {"weight_bytes", known ? json::value(v.info.weight_bytes) : json::value(nullptr)},
            {"kv_pool_bytes", known ? json::value(v.info.kv_pool_bytes) : json::value(nullptr)}};
        if (!v.failure.empty())
            o["failure"] = v.failure;
        return o;
    }

    static json::object operation_json(const msg::operation_status& op) {
        json::object o{
            {"id", op.id},
            {"kind", op.kind},
            {"version", op.version.empty() ? json::value(nullptr) : json::value(op.version)},
            {"state", op.state},
            {"started_ms", op.started_ms},
            {"finished_ms",
             op.finished_ms > 0 ? json::value(op.finished_ms) : json::value(nullptr)},
            // Request to flip, in milliseconds (formatted: Boost.JSON prints doubles
            // in exponent form).
            {"swap_ms",
             op.swap_us > 0 ? json::value(json::string(ms(op.swap_us))) : json::value(nullptr)}};
        if (!op.failure.empty())
            o["failure"] = op.failure;
        return o;
    }

    // ---- model management ---------------------------------------------------------------

    /// Sends one management message to the supervisor from a helper actor and answers with its
    /// ticket on this connection's strand (no asio thread waits).
    void ask_supervisor(const std::string& route,
                        std::function<void(caf::event_based_actor*, msg::supervisor_actor,
                                           std::function<void(msg::operation_ticket)>)>
                            ask) {
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
        auto ex = stream_.get_executor();
        auto self = shared_from_this();
        auto answer = [ex, self, route](msg::operation_ticket t) {
            net::post(ex, [self, route, t = std::move(t)] {
                self->safely("operation", [&] { self->ticket_reply(route, t); });
            });
        };
        // One unused spawn argument: CAF 0.17 dereferences a null argument tuple otherwise.
        srv_.sys.spawn(
            [sup, ask, answer](caf::event_based_actor* a, int /*unused*/) { ask(a, sup, answer); },
            0);
    }

    void ticket_reply(const std::string& route, const msg::operation_ticket& t) {
        if (t.refusal.empty()) {
            json::object o{
                {"alias", t.alias},
                {"version", t.version.empty() ? json::value(nullptr) : json::value(t.version)},
                {"state", t.state},
                {"operation_id", t.operation_id}};
            return send_json(route, 202, json::serialize(o));
        }
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
        } else {
            e = invalid_value("", t.message);
        }
        const auto id = "req-" + std::to_string(srv_.next_id.fetch_add(1));
        auto body = json::parse(error_body(e, id)).as_object();
        if (!t.operation_id.empty())
            body["operation_id"] = t.operation_id;
        send_json(route, e.status, json::serialize(body), id);
    }

    /// POST /v1/models/load {"alias","path","version"?,"warmup"?,"device"?}
    void do_load(const std::string& body) {
        const std::string route = "/v1/models/load";
        auto o = body_object(route, body);
        if (!o)
            return;
        auto name_ok = [](std::string_view s, std::size_t max) {
            return !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                       c == '-' || c == ':';
            });
        };
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
        if (const auto* w = o->if_contains("warmup"); w && !w->is_null()) {
            if (!w->is_bool())
                return send_error(route, invalid_value("warmup", "warmup must be true or false"),
                                  "-");
            order.warmup = w->get_bool();
        }
        if (const auto* d = o->if_contains("device"); d && !d->is_null()) {
            if (!d->is_string() || (d->get_string() != "auto" && d->get_string() != "cpu" &&
                                    d->get_string() != "cuda"))
                return send_error(route,
                                  invalid_value("device", "device must be auto, cpu or cuda"), "-");
            order.device = d->get_string();
        }
        ask_supervisor(route, [order](caf::event_based_actor* a, msg::supervisor_actor sup,
                                      std::function<void(msg::operation_ticket)> answer) {
            a->request(sup, std::chrono::seconds(30), msg::load_atom_v, order)
                .then([answer](msg::operation_ticket t) { answer(std::move(t)); },
                      [answer, alias = order.alias](caf::error& e) {
                          answer({"invalid",
                                  "the supervisor did not answer: " + caf::to_string(e),
                                  {},
                                  alias,
                                  {},
                                  {}});
                      });
        });
    }

    /// POST /v1/models/{alias}/rollback, DELETE /v1/models/{alias}, and the test hook
    /// POST /v1/models/{alias}/crash.
    void do_model_op(const std::string& kind, const std::string& alias) {
        const std::string route = kind == "unload"     ? "/v1/models/{alias}"
                                  : kind == "rollback" ? "/v1/models/{alias}/rollback"
                                                       : "/v1/models/{alias}/crash";
        if (kind == "crash") {
            auto sup = srv_.opt.supervisor;
            if (sup)
                caf::anon_send(sup, msg::crash_atom_v, alias);
            spdlog::warn("test hook: crash injected into the serving executor of '{}'", alias);
            return send_json(route, 202, json::serialize(json::object{{"alias", alias}}));
        }
        ask_supervisor(route, [kind, alias](caf::event_based_actor* a, msg::supervisor_actor sup,
                                            std::function<void(msg::operation_ticket)> answer) {
            auto on_err = [answer, alias](caf::error& e) {
                answer({"invalid",
                        "the supervisor did not answer: " + caf::to_string(e),
                        {},
                        alias,
                        {},
                        {}});
            };
            auto on_ok = [answer](msg::operation_ticket t) { answer(std::move(t)); };
            if (kind == "rollback")
                a->request(sup, std::chrono::seconds(30), msg::rollback_atom_v, alias)
                    .then(on_ok, on_err);
            else
                a->request(sup, std::chrono::seconds(30), msg::unload_atom_v, alias)
                    .then(on_ok, on_err);
        });
    }

    /// GET /v1/models (alias empty) or GET /v1/models/{alias}.
    void do_models(std::string alias) {
        const std::string route = alias.empty() ? "/v1/models" : "/v1/models/{alias}";
        with_snapshot([self = shared_from_this(), alias, route](snapshot snap) {
            // Without a supervisor the models are the ones admission routes to.
            if (!self->srv_.opt.supervisor)
                for (const auto& x : snap.stats)
                    if (!x.model.empty())
                        snap.models.push_back(
                            {x.model, "1", "ready", {}, {}, {}, 0, 0, {}, {}, {}, {}});
            if (alias.empty()) {
                json::array data;
                for (const auto& m : snap.models)
                    if (m.state != "unloaded") // gone; GET /v1/models/{alias} still tells how
                        data.push_back(model_json(m));
                json::object root{{"object", "list"}, {"data", std::move(data)}};
                return self->send_json(route, 200, json::serialize(root));
            }
            for (const auto& m : snap.models) {
                if (m.alias != alias)
                    continue;
                auto o = model_json(m);
                if (m.state == "ready") {
                    o["device_reason"] = m.info.device_reason;
                    o["engine"] = m.info.describe;
                    o["weight_bytes"] = m.info.weight_bytes;
                    o["kv_pool_bytes"] = m.info.kv_pool_bytes;
                }
                o["restarts"] = m.restarts;
                o["failure"] = m.failure.empty() ? json::value(nullptr) : json::value(m.failure);
                json::array versions, ops;
                for (const auto& v : m.versions)
                    versions.push_back(version_json(v));
                for (const auto& op : m.operations)
                    ops.push_back(operation_json(op));
                o["versions"] = std::move(versions);
                o["operations"] = std::move(ops);
                for (const auto& x : snap.stats)
                    if (x.model == alias)
                        o["performance"] = stats_json(x);
                return self->send_json(route, 200, json::serialize(o));
            }
            auto e = to_api_error({errc::not_found, "no model '" + alias + "'"});
            e.suggestion = "GET /v1/models lists the served models";
            self->send_error(route, e, "-");
        });
    }

    /// The JSON object of a tokenize/detokenize body, or the 400 that says why not.
    std::optional<json::object> body_object(const std::string& route, const std::string& body) {
        boost::system::error_code ec;
        auto v = json::parse(body, ec);
        if (ec) {
            send_error(route, invalid_value("", "the body is not valid JSON: " + ec.message()),
                       "-");
            return std::nullopt;
        }
        if (!v.is_object()) {
            send_error(route, invalid_value("", "the body must be a JSON object"), "-");
            return std::nullopt;
        }
        return std::move(v.get_object());
    }

    /// The "model" field (default model when absent), or nullopt after a 400.
    std::optional<std::string> model_field(const std::string& route, const json::object& o) {
        const auto* m = o.if_contains("model");
        if (!m || m->is_null())
            return srv_.opt.default_model;
        if (!m->is_string()) {
            send_error(route, invalid_value("model", "model must be a string"), "-");
            return std::nullopt;
        }
        return std::string(m->get_string());
    }

    void do_tokenize(const std::string& body) {
        const std::string route = "/v1/tokenize";
        auto o = body_object(route, body);
        if (!o)
            return;
        const auto* text = o->if_contains("text");
        if (!text || !text->is_string())
            return send_error(route, invalid_value("text", "text must be a string"), "-");
        bool add_bos = false;
        if (const auto* b = o->if_contains("add_bos"); b && !b->is_null()) {
            if (!b->is_bool())
                return send_error(route, invalid_value("add_bos", "add_bos must be true or false"),
                                  "-");
            add_bos = b->get_bool();
        }
        bool special = false;
        if (const auto* b = o->if_contains("parse_special"); b && !b->is_null()) {
            if (!b->is_bool())
                return send_error(
                    route, invalid_value("parse_special", "parse_special must be true or false"),
                    "-");
            special = b->get_bool();
        }
        auto model = model_field(route, *o);
        if (!model)
            return;
        if (!srv_.opt.text.tokenize)
            return send_error(route, invalid_value("text", "this server has no tokenizer loaded"),
                              "-");
        auto ids = srv_.opt.text.tokenize(*model, text->get_string(), add_bos, special);
        if (!ids)
            return send_error(route, to_api_error(ids.error(), 0, "text"), "-");
        json::array a;
        for (auto t : *ids)
            a.push_back(t);
        send_json(route, 200,
                  json::serialize(json::object{{"tokens", std::move(a)}, {"model", *model}}));
    }

    void do_detokenize(const std::string& body) {
        const std::string route = "/v1/detokenize";
        auto o = body_object(route, body);
        if (!o)
            return;
        const auto* toks = o->if_contains("tokens");
        if (!toks || !toks->is_array())
            return send_error(route, invalid_value("tokens", "tokens must be an array of ids"),
                              "-");
        std::vector<std::int32_t> ids;
        for (const auto& t : toks->get_array()) {
            if (!t.is_int64() || t.get_int64() < 0 ||
                t.get_int64() > std::numeric_limits<std::int32_t>::max())
                return send_error(route,
                                  invalid_value("tokens", "tokens must hold token ids (integers "
                                                          ">= 0)"),
                                  "-");
            ids.push_back(static_cast<std::int32_t>(t.get_int64()));
        }
        auto model = model_field(route, *o);
        if (!model)
            return;
        if (!srv_.opt.text.detokenize)
            return send_error(route, invalid_value("tokens", "this server has no tokenizer loaded"),
                              "-");
        auto text = srv_.opt.text.detokenize(*model, ids);
        if (!text)
            return send_error(route, to_api_error(text.error(), 0, "tokens"), "-");
        send_json(
            route, 200,
            json::serialize(json::object{{"text", utf8_or_replacement(*text)}, {"model", *model}}));
    }

    // ---- plain responses ----------------------------------------------------------------

    void send_error(const std::string& route, const api_error& e, const std::string& req_id) {
        // Every error body carries a request id, also for requests refused before they got one.
        const auto id = req_id == "-" ? "req-" + std::to_string(srv_.next_id.fetch_add(1)) : req_id;
        send_json(route, e.status, error_body(e, id), id, {}, e.retry_after_s);
    }

    void send_json(const std::string& route, unsigned status, std::string body,
                   const std::string& req_id = "-", const std::string& server_timing = {},
                   std::uint32_t retry_after = 0, bool counted = false) {
        res_ = {static_cast<bhttp::status>(status), 11};
        res_.set(bhttp::field::content_type, "application/json");
        if (req_id != "-")
            res_.set("X-Request-Id", req_id);
        if (!server_timing.empty())
            res_.set("Server-Timing", server_timing);
        if (retry_after > 0)
            res_.set(bhttp::field::retry_after, std::to_string(retry_after));
        res_.body() = std::move(body);
        write_response(route, counted);
    }

    void write_response(const std::string& route, bool counted) {
        if (watching_) {
            // The disconnect watch must not outlive its request (the next read takes over).
            beast::error_code ec;
            stream_.socket().cancel(ec);
            watching_ = false;
        }
        if (!counted && !route.empty()) {
            srv_.m.request_done(route, res_.result_int(), 0);
            // Refusals before a request started (validation, auth, routing) are logged too;
            // probes and scrapes stay out of the log.
            if (res_.result_int() >= 400)
                spdlog::info("{} {} {}", std::string(res_["X-Request-Id"]), route,
                             res_.result_int());
        }
        if (srv_.draining)
            keep_alive_ = false;
        res_.keep_alive(keep_alive_);
        res_.prepare_payload();
        stream_.expires_after(srv_.opt.write_timeout);
        responding_ = true;
        bhttp::async_write(stream_, res_,
                           [self = shared_from_this()](beast::error_code ec, std::size_t) {
                               self->responding_ = false;
                               if (ec)
                                   return self->close();
                               if (!self->keep_alive_)
                                   return self->linger_close();
                               self->do_read();
                           });
    }

    /// Closes after our last response without losing it: closing a socket whose receive buffer
    /// still holds unread bytes (the rest of a refused request) sends RST, and the client may then
    /// never see the response. So: shut down our side, read and discard what is left for a
    /// bounded time and size, then close.
    void linger_close() {
        if (closed_)
            return;
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        if (ec)
            return close();
        linger_left_ = 64 * 1024;
        stream_.expires_after(std::chrono::seconds(2));
        linger_read();
    }

    void linger_read() {
        stream_.async_read_some(net::buffer(linger_buf_),
                                [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                    if (ec || n >= self->linger_left_)
                                        return self->close();
                                    self->linger_left_ -= n;
                                    self->linger_read();
                                });
    }

    void close() {
        if (closed_)
            return;
        closed_ = true;
        --reg_->open;
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        stream_.close();
    }

    beast::tcp_stream stream_;
    server::impl& srv_;
    std::shared_ptr<session_registry> reg_;
    std::uint64_t reg_id_ = 0;
    net::steady_timer ping_;
    beast::flat_buffer buf_;
    std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
    bhttp::response<bhttp::string_body> res_;
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
    std::array<char, 4096> linger_buf_{};
    std::size_t linger_left_ = 0;
};

} // namespace

// The accept loop never ends while the acceptor is open: every error re-arms it.
void server::impl::do_accept() {
    acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
        if (ec == net::error::operation_aborted || !acceptor->is_open())
            return; // closed by stop()
        if (ec)
            return on_accept_error(ec);
        auto sess = std::make_shared<session>(std::move(s), *this);
        if (sessions->open.load() > static_cast<int>(opt.max_connections))
            sess->refuse_overloaded(); // counted open above: more than the cap is open now
        else
            sess->run();
        do_accept();
    });
}

void server::impl::on_accept_error(const beast::error_code& ec) {
    // Out of descriptors or kernel memory, accepting again at once would spin on the same
    // error: wait a moment (closing connections free descriptors). Any other error concerns one
    // connection (reset before it was taken): accept the next at once.
    const bool exhausted = ec == net::error::no_descriptors || ec.value() == ENFILE ||
                           ec == net::error::no_buffer_space || ec == net::error::no_memory;
    const auto now = steady::now();
    if (now - last_accept_warning > std::chrono::seconds(1)) {
        last_accept_warning = now;
        spdlog::warn("accept failed: {}{}", ec.message(),
                     exhausted ? " (retrying every 50 ms; raise the descriptor limit or lower "
                                 "max_connections)"
                               : "");
    }
    if (!exhausted)
        return do_accept();
    if (!accept_backoff)
        accept_backoff.emplace(acceptor->get_executor());
    accept_backoff->expires_after(std::chrono::milliseconds(50));
    accept_backoff->async_wait([this](beast::error_code wec) {
        if (!wec && acceptor->is_open())
            do_accept();
    });
}

server::server(caf::actor_system& sys, msg::admission_actor admission, server_options opt)
    : impl_(std::make_unique<impl>(sys, std::move(admission), std::move(opt))) {}

server::~server() {
    stop();
}

result<std::uint16_t> server::start() {
    auto& i = *impl_;
    beast::error_code ec;
    auto addr = net::ip::make_address(i.opt.address, ec);
    if (ec)
        return error{errc::invalid_argument,
                     "listen address '" + i.opt.address + "': " + ec.message()};
    tcp::endpoint ep{addr, i.opt.port};
    i.acceptor.emplace(net::make_strand(i.ioc));
    i.acceptor->open(ep.protocol(), ec);
    if (!ec)
        i.acceptor->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec)
        i.acceptor->bind(ep, ec);
    if (!ec)
        i.acceptor->listen(net::socket_base::max_listen_connections, ec);
    if (ec)
        return error{errc::io_error, "cannot listen on " + i.opt.address + ":" +
                                         std::to_string(i.opt.port) + ": " + ec.message()};
    const auto port = i.acceptor->local_endpoint().port();
    i.do_accept();
    for (unsigned t = 0; t < std::max(1u, i.opt.io_threads); ++t)
        i.threads.emplace_back([&i] { run_io(i.ioc); });
    return port;
}

void server::begin_drain() {
    impl_->draining = true;
}

std::size_t server::cut_all() {
    std::vector<std::function<void()>> cuts;
    {
        std::lock_guard lk(impl_->sessions->mu);
        for (const auto& [id, f] : impl_->sessions->cut)
            cuts.push_back(f);
    }
    const auto n = static_cast<std::size_t>(std::max(0, impl_->sessions->calls.load()));
    for (auto& f : cuts)
        f();
    return n;
}

std::size_t server::active_requests() const {
    return static_cast<std::size_t>(std::max(0, impl_->sessions->calls.load()));
}

std::size_t server::open_connections() const {
    return static_cast<std::size_t>(std::max(0, impl_->sessions->open.load()));
}

void server::stop() {
    if (!impl_)
        return;
    if (impl_->acceptor)
        net::post(impl_->acceptor->get_executor(), [&i = *impl_] {
            beast::error_code ec;
            i.acceptor->close(ec);
        });
    impl_->ioc.stop();
    for (auto& t : impl_->threads)
        if (t.joinable())
            t.join();
    impl_->threads.clear();
}

} // namespace bitnet::http
