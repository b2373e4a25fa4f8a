#include "http/server.hpp"

#include "http/api_json.hpp"
#include "http/errors.hpp"
#include "http/metrics.hpp"
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

#include <atomic>
#include <deque>
#include <optional>
#include <thread>

namespace bitnet::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
namespace json = boost::json;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;

namespace {

/// Where a sink actor delivers (callbacks run on CAF threads; they post to the strand).
struct sink_target {
    std::function<void(msg::token_event)> on_token;
    std::function<void(msg::completion)> on_done;
    std::function<void(caf::error)> on_fail;
};

/// One per request: submits to admission and relays the request's events. Quits at the end, or
/// when the HTTP session kills it (client gone), which the batcher sees as a cancel.
msg::sink_actor::behavior_type sink_fn(msg::sink_actor::pointer self, msg::admission_actor adm,
                                       msg::generate_request req, std::shared_ptr<sink_target> t) {
    self->request(adm, std::chrono::seconds(30), msg::submit_atom_v, std::move(req),
                  caf::actor_cast<msg::sink_actor>(self))
        .then(
            [self](msg::request_id) {
                // The reply comes from the batcher that holds the sequence (admission
                // delegates): watch it, so a crashed model fails this request instead of
                // leaving the client waiting.
                if (auto& sender = self->current_sender())
                    self->monitor(caf::actor_cast<caf::actor_addr>(sender));
            },
            [self, t](caf::error& e) {
                t->on_fail(std::move(e));
                self->quit();
            });
    self->set_down_handler([self, t](caf::down_msg& dm) {
        t->on_fail(msg::to_caf_error(errc::internal, "the model's batcher stopped (" +
                                                         caf::to_string(dm.reason) +
                                                         "); the request was lost"));
        self->quit();
    });
    return {
        [t](msg::token_atom, msg::token_event& ev) { t->on_token(std::move(ev)); },
        [self, t](msg::done_atom, msg::completion& c) {
            t->on_done(std::move(c));
            self->quit();
        },
        [self, t](msg::fail_atom, msg::request_id, caf::error& e) {
            t->on_fail(std::move(e));
            self->quit();
        },
    };
}

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

} // namespace

struct server::impl {
    caf::actor_system& sys;
    msg::admission_actor admission;
    server_options opt;
    net::io_context ioc;
    std::optional<tcp::acceptor> acceptor;
    std::vector<std::thread> threads;
    std::atomic<std::uint64_t> next_id{1};
    metrics m;
    steady::time_point started = steady::now();

    impl(caf::actor_system& s, msg::admission_actor a, server_options o)
        : sys(s)
        , admission(std::move(a))
        , opt(std::move(o)) {}

    void do_accept();
};

namespace {

class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket&& s, server::impl& srv)
        : stream_(std::move(s))
        , srv_(srv)
        , ping_(stream_.get_executor()) {}

    void run() {
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
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
        caf::actor sink;
        std::vector<msg::token_event> tokens;
        std::string text;
        steady::time_point start = steady::now();
        steady::time_point last_token{};
        std::int64_t created = unix_now();
        bool ended = false;
    };

    void do_read() {
        parser_.emplace();
        parser_->body_limit(srv_.opt.max_body_bytes);
        stream_.expires_after(srv_.opt.read_timeout);
        bhttp::async_read(
            stream_, buf_, *parser_,
            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    void on_read(beast::error_code ec) {
        if (ec == bhttp::error::body_limit) {
            keep_alive_ = false;
            return send_error("",
                              invalid_status(413, "the body exceeds max_body_bytes (" +
                                                      std::to_string(srv_.opt.max_body_bytes) +
                                                      ")"),
                              "-");
        }
        if (ec)
            return close();
        handle(parser_->release());
    }

    static api_error invalid_status(unsigned status, std::string message) {
        api_error e = invalid_value("", std::move(message));
        e.status = status;
        e.code = status == 404 ? "not_found" : "invalid_request";
        if (status == 404)
            e.type = "not_found_error";
        if (status == 401) {
            e.type = "authentication_error";
            e.code = "invalid_api_key";
            e.suggestion = "send Authorization: Bearer <key>";
        }
        return e;
    }

    void handle(bhttp::request<bhttp::string_body> req) {
        keep_alive_ = req.keep_alive();
        std::string target(req.target());
        if (auto q = target.find('?'); q != std::string::npos)
            target.resize(q);
        const auto method = req.method();
        const bool get = method == bhttp::verb::get;
        const bool post = method == bhttp::verb::post;
        auto wrong_method = [&] {
            send_error(target, invalid_status(405, "method not allowed on " + target), "-");
        };

        if (target == "/health/live")
            return get ? send_json(target, 200, R"({"status":"ok"})") : wrong_method();
        if (target == "/health/ready" || target == "/health")
            return get ? do_health(target) : wrong_method();
        if (target == "/metrics")
            return get ? do_metrics() : wrong_method();

        if (!srv_.opt.api_keys.empty() && target.rfind("/v1/", 0) == 0) {
            const auto auth = std::string(req[bhttp::field::authorization]);
            bool ok = false;
            for (const auto& k : srv_.opt.api_keys)
                ok = ok || auth == "Bearer " + k;
            if (!ok)
                return send_error(target, invalid_status(401, "missing or wrong API key"), "-");
        }
        if (target == "/v1/stats")
            return get ? do_stats() : wrong_method();
        if (target == "/v1/models")
            return get ? do_models() : wrong_method();

        route_kind kind;
        if (target == "/v1/inference")
            kind = route_kind::native;
        else if (target == "/v1/inference/stream")
            kind = route_kind::native_stream;
        else if (target == "/v1/completions")
            kind = route_kind::completions;
        else if (target == "/v1/chat/completions")
            kind = route_kind::chat;
        else if (target == "/v1/tokenize")
            return post ? do_tokenize(req.body()) : wrong_method();
        else
            return send_error(target, invalid_status(404, "no route " + target), "-");
        if (!post)
            return wrong_method();
        const auto ctype = std::string(req[bhttp::field::content_type]);
        if (!ctype.empty() && ctype.find("application/json") == std::string::npos)
            return send_error(target, invalid_status(415, "send Content-Type: application/json"),
                              "-");
        start_inference(target, kind, req.body());
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
        if (in.prompt_is_ids) {
            g.prompt = std::move(in.prompt_ids);
        } else {
            const std::string text = kind == route_kind::chat
                                         ? render_chat(in.messages, chat_template::bitnet)
                                         : in.prompt_text;
            if (!srv_.opt.tokenize)
                return send_error(route,
                                  invalid_value(kind == route_kind::chat ? "messages" : "prompt",
                                                "this server has no tokenizer for text prompts; "
                                                "send the prompt as token ids"),
                                  c.req_id);
            auto ids = srv_.opt.tokenize(c.model, text, in.add_bos);
            if (!ids)
                return send_error(route, to_api_error(ids.error(), 0, "prompt"), c.req_id);
            g.prompt = std::move(*ids);
        }
        g.max_tokens = in.max_tokens;
        g.params = in.params;
        g.stop = std::move(in.stop);
        g.stop_token_ids = std::move(in.stop_token_ids);
        g.prio = in.prio;
        g.timeout_ms = in.timeout_ms;
        g.t_received_us =
            std::chrono::duration_cast<std::chrono::microseconds>(steady::now().time_since_epoch())
                .count();

        auto t = std::make_shared<sink_target>();
        auto self = shared_from_this();
        auto ex = stream_.get_executor();
        t->on_token = [self, ex](msg::token_event ev) {
            net::post(ex, [self, ev = std::move(ev)]() mutable { self->on_token(std::move(ev)); });
        };
        t->on_done = [self, ex](msg::completion done) {
            net::post(ex,
                      [self, done = std::move(done)]() mutable { self->on_done(std::move(done)); });
        };
        t->on_fail = [self, ex](caf::error e) {
            net::post(ex, [self, e = std::move(e)]() mutable { self->on_fail(std::move(e)); });
        };
        call_ = std::move(c);
        if (call_->stream)
            begin_stream();
        else
            watch_disconnect();
        call_->sink = caf::actor_cast<caf::actor>(
            srv_.sys.spawn(sink_fn, srv_.admission, std::move(g), std::move(t)));
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
                                        beast::error_code aec;
                                        if (self->stream_.socket().available(aec) == 0 || aec)
                                            self->abort_call();
                                        // Otherwise the client pipelined its next request: it is
                                        // still there.
                                    });
    }

    // ---- streaming ----------------------------------------------------------------------

    void begin_stream() {
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

    std::string chat_chunk(const std::string& delta, const std::string& finish) {
        return R"({"id":"chatcmpl-)" + call_->req_id.substr(4) +
               R"(","object":"chat.completion.chunk","created":)" + std::to_string(call_->created) +
               R"(,"model":)" + js(call_->model) +
               R"(,"system_fingerprint":"bitnet-serve","choices":[{"index":0,"delta":)" + delta +
               R"(,"logprobs":null,"finish_reason":)" + finish + R"(}],"usage":null})";
    }

    std::string completion_chunk(const std::string& text, const std::string& finish) {
        return R"({"id":"cmpl-)" + call_->req_id.substr(4) +
               R"(","object":"text_completion","created":)" + std::to_string(call_->created) +
               R"(,"model":)" + js(call_->model) + R"(,"choices":[{"text":)" + js(text) +
               R"(,"index":0,"logprobs":null,"finish_reason":)" + finish + R"(}],"usage":null})";
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

    void abort_call() {
        if (call_ && call_->sink)
            caf::anon_send_exit(call_->sink, caf::exit_reason::user_shutdown);
        if (call_)
            call_->ended = true;
        ping_.cancel();
        close();
    }

    // ---- events from the sink (on the strand) -------------------------------------------

    void on_token(msg::token_event ev) {
        if (!call_ || call_->ended)
            return;
        const auto now = steady::now();
        if (call_->last_token != steady::time_point{})
            srv_.m.inter_token(std::chrono::duration<double>(now - call_->last_token).count());
        call_->last_token = now;
        call_->text += ev.text;
        if (!sse_) {
            call_->tokens.push_back(std::move(ev));
            return;
        }
        switch (call_->kind) {
        case route_kind::native:
        case route_kind::native_stream:
            sse_event("token", R"({"index":)" + std::to_string(ev.index) + R"(,"token_id":)" +
                                   std::to_string(ev.token) + R"(,"text":)" + js(ev.text) +
                                   R"(,"logprob":)" + fixed(ev.logprob, 6) + "}");
            break;
        case route_kind::chat:
            if (!ev.text.empty())
                sse_data(chat_chunk(R"({"content":)" + js(ev.text) + "}", "null"));
            break;
        case route_kind::completions:
            if (!ev.text.empty())
                sse_data(completion_chunk(ev.text, "null"));
            break;
        }
    }

    void on_done(msg::completion c) {
        if (!call_ || call_->ended)
            return;
        srv_.m.completion(c);
        srv_.m.request_done(call_->route, 200,
                            std::chrono::duration<double>(steady::now() - call_->start).count());
        if (sse_) {
            switch (call_->kind) {
            case route_kind::native:
            case route_kind::native_stream:
                sse_event("done", R"({"finish_reason":)" + js(c.finish_reason) + R"(,"usage":)" +
                                      usage_json(c) + R"(,"timings":)" + timings_json(c) +
                                      R"(,"model_version":)" + js(c.model_version) + "}");
                break;
            case route_kind::chat:
                sse_data(chat_chunk("{}", js(openai_finish(c.finish_reason))));
                if (call_->include_usage)
                    sse_data(R"({"id":"chatcmpl-)" + call_->req_id.substr(4) +
                             R"(","object":"chat.completion.chunk","created":)" +
                             std::to_string(call_->created) + R"(,"model":)" + js(call_->model) +
                             R"(,"system_fingerprint":"bitnet-serve","choices":[],"usage":)" +
                             usage_json(c) + "}");
                sse_data("[DONE]");
                break;
            case route_kind::completions:
                sse_data(completion_chunk("", js(openai_finish(c.finish_reason))));
                if (call_->include_usage)
                    sse_data(R"({"id":"cmpl-)" + call_->req_id.substr(4) +
                             R"(","object":"text_completion","created":)" +
                             std::to_string(call_->created) + R"(,"model":)" + js(call_->model) +
                             R"(,"choices":[],"usage":)" + usage_json(c) + "}");
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
                js(call_->text) + R"(},"logprobs":null,"finish_reason":)" +
                js(openai_finish(c.finish_reason)) + R"(}],"usage":)" + usage_json(c) + "}";
        } else {
            body = R"({"id":"cmpl-)" + id_num + R"(","object":"text_completion","created":)" +
                   std::to_string(call_->created) + R"(,"model":)" + js(c.model) +
                   R"(,"choices":[{"text":)" + js(call_->text) +
                   R"(,"index":0,"logprobs":null,"finish_reason":)" +
                   js(openai_finish(c.finish_reason)) + R"(}],"usage":)" + usage_json(c) + "}";
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

    void do_health(const std::string& target) {
        auto self = shared_from_this();
        auto ex = stream_.get_executor();
        srv_.sys.spawn([self, ex, target](caf::event_based_actor* a) {
            a->request(self->srv_.admission, std::chrono::seconds(5), msg::ready_atom_v)
                .then(
                    [self, ex, target](bool ok, std::string why) {
                        net::post(ex,
                                  [self, target, ok, why] { self->health_reply(target, ok, why); });
                    },
                    [self, ex, target](caf::error& e) {
                        net::post(ex, [self, target, why = caf::to_string(e)] {
                            self->health_reply(target, false, why);
                        });
                    });
        });
    }

    void health_reply(const std::string& target, bool ok, const std::string& why) {
        const auto uptime =
            std::chrono::duration_cast<std::chrono::seconds>(steady::now() - srv_.started).count();
        std::string body = R"({"status":)" + js(ok ? "ok" : "unavailable") + R"(,"reason":)" +
                           js(why) + R"(,"version":"0.1.0","uptime_s":)" + std::to_string(uptime) +
                           "}";
        send_json(target, ok ? 200 : 503, std::move(body), "-", {}, ok ? 0 : 1);
    }

    void with_stats(std::function<void(std::vector<msg::batcher_stats>)> f) {
        auto self = shared_from_this();
        auto ex = stream_.get_executor();
        srv_.sys.spawn([self, ex, f](caf::event_based_actor* a) {
            a->request(self->srv_.admission, std::chrono::seconds(5), msg::stats_atom_v)
                .then(
                    [ex, f](std::vector<msg::batcher_stats> s) {
                        net::post(ex, [f, s = std::move(s)] { f(s); });
                    },
                    [ex, f](caf::error&) { net::post(ex, [f] { f({}); }); });
        });
    }

    void do_metrics() {
        with_stats([self = shared_from_this()](std::vector<msg::batcher_stats> s) {
            self->srv_.m.queues(s);
            self->res_ = {bhttp::status::ok, 11};
            self->res_.set(bhttp::field::content_type, "text/plain; version=0.0.4");
            self->res_.body() = self->srv_.m.render();
            self->write_response("/metrics", false);
        });
    }

    void do_stats() {
        with_stats([self = shared_from_this()](std::vector<msg::batcher_stats> s) {
            json::array models;
            for (const auto& x : s) {
                json::object o;
                o["model"] = x.model;
                o["waiting"] = {
                    {"high", x.waiting[0]}, {"normal", x.waiting[1]}, {"low", x.waiting[2]}};
                o["waiting_prompt_tokens"] = x.waiting_prompt_tokens;
                o["running"] = x.running;
                o["kv_blocks_used"] = x.kv_blocks_used;
                o["kv_blocks_total"] = x.kv_blocks_total;
                o["steps"] = x.steps;
                o["preemptions"] = x.preemptions;
                o["finished"] = x.finished;
                models.push_back(std::move(o));
            }
            json::object root;
            root["models"] = std::move(models);
            self->send_json("/v1/stats", 200, json::serialize(root));
        });
    }

    void do_models() {
        with_stats([self = shared_from_this()](std::vector<msg::batcher_stats> s) {
            json::array data;
            for (const auto& x : s) {
                if (x.model.empty())
                    continue;
                data.push_back({{"id", x.model},
                                {"object", "model"},
                                {"created", unix_now()},
                                {"owned_by", "bitnet-serve"},
                                {"state", "ready"}});
            }
            json::object root;
            root["object"] = "list";
            root["data"] = std::move(data);
            self->send_json("/v1/models", 200, json::serialize(root));
        });
    }

    void do_tokenize(const std::string& body) {
        boost::system::error_code ec;
        auto v = json::parse(body, ec);
        const auto* o = ec ? nullptr : v.if_object();
        const auto* text = o ? o->if_contains("text") : nullptr;
        if (!text || !text->is_string())
            return send_error("/v1/tokenize", invalid_value("text", "text must be a string"), "-");
        if (!srv_.opt.tokenize)
            return send_error("/v1/tokenize",
                              invalid_value("text", "this server has no tokenizer loaded"), "-");
        bool add_bos = false;
        if (const auto* b = o->if_contains("add_bos"); b && b->is_bool())
            add_bos = b->get_bool();
        auto ids = srv_.opt.tokenize(srv_.opt.default_model, text->get_string(), add_bos);
        if (!ids)
            return send_error("/v1/tokenize", to_api_error(ids.error()), "-");
        json::array a;
        for (auto t : *ids)
            a.push_back(t);
        send_json("/v1/tokenize", 200, json::serialize(json::object{{"tokens", std::move(a)}}));
    }

    // ---- plain responses ----------------------------------------------------------------

    void send_error(const std::string& route, const api_error& e, const std::string& req_id) {
        send_json(route, e.status, error_body(e, req_id), req_id, {}, e.retry_after_s);
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
        if (!counted && !route.empty())
            srv_.m.request_done(route, res_.result_int(), 0);
        res_.keep_alive(keep_alive_);
        res_.prepare_payload();
        stream_.expires_after(srv_.opt.write_timeout);
        bhttp::async_write(stream_, res_,
                           [self = shared_from_this()](beast::error_code ec, std::size_t) {
                               if (ec || !self->keep_alive_)
                                   return self->close();
                               self->do_read();
                           });
    }

    void close() {
        if (closed_)
            return;
        closed_ = true;
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        stream_.close();
    }

    beast::tcp_stream stream_;
    server::impl& srv_;
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
};

} // namespace

void server::impl::do_accept() {
    acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
        if (ec)
            return; // acceptor closed (drain or stop)
        std::make_shared<session>(std::move(s), *this)->run();
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
        i.threads.emplace_back([&i] { i.ioc.run(); });
    return port;
}

void server::stop_accepting() {
    auto& i = *impl_;
    net::post(i.ioc, [&i] {
        if (i.acceptor && i.acceptor->is_open()) {
            beast::error_code ec;
            i.acceptor->close(ec);
        }
    });
}

void server::stop() {
    if (!impl_)
        return;
    impl_->ioc.stop();
    for (auto& t : impl_->threads)
        if (t.joinable())
            t.join();
    impl_->threads.clear();
}

} // namespace bitnet::http
