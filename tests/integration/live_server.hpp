// What the in-process HTTP server tests share: `live_server` (actor system, admission, a
// supervisor over the contract-checking fake engine, HTTP on 127.0.0.1:0) and its replies.
#pragma once

#include "actors/admission/admission.hpp"
#include "actors/fake_engine.hpp"
#include "actors/fake_vocab.hpp"
#include "actors/supervisor/supervisor.hpp"
#include "http/api_json.hpp"
#include "http/routes/server.hpp"
#include "messages/errors.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <regex>
#include <thread>

namespace live_rig {

using namespace bitnet;
using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct test_config : caf::actor_system_config {
    test_config() {
        msg::register_messages(*this);
        set("scheduler.max-threads", 2);
    }
};

struct reply {
    unsigned status = 0;
    std::string body;
    std::string retry_after;
    std::string content_type;
};

/// A running server: actor system, admission, supervisor (fake engine), HTTP on 127.0.0.1:0.
struct live_server {
    test_config cfg;
    caf::actor_system sys{cfg};
    std::shared_ptr<test::fake_engine_probe> probe = std::make_shared<test::fake_engine_probe>();
    std::shared_ptr<const model::tokenizer> vocab = test::fake_tokenizer();
    msg::admission_actor adm;
    msg::supervisor_actor sup;
    std::unique_ptr<http::server> srv;
    std::uint16_t port = 0;

    explicit live_server(std::uint32_t max_waiting = 64, std::chrono::milliseconds step = 2ms,
                         std::uint32_t max_batch_seqs = 8, std::vector<std::string> keys = {},
                         std::vector<std::string> admin_keys = {}) {
        actors::admission_options ao;
        ao.default_model = "tiny";
        ao.max_waiting_requests = max_waiting;
        ao.poll_interval = 5ms;
        adm = actors::spawn_admission(sys, ao);
        actors::supervisor_options so;
        so.admission = adm;
        actors::model_spec spec;
        spec.alias = "tiny";
        spec.executor =
            test::fake_order([p = probe, step]() -> result<std::unique_ptr<model::engine>> {
                return std::make_unique<test::fake_engine>(64, step, p);
            });
        spec.batcher.policy.max_batch_seqs = max_batch_seqs;
        // The version's text side over the fake vocabulary (it has no byte tokens: only ids
        // decode, no text can be tokenized).
        spec.text.tokenizer = vocab;
        so.models.push_back(spec);
        sup = actors::spawn_supervisor(sys, so);
        http::server_options ho;
        ho.default_model = "tiny";
        ho.max_body_bytes = 4096;
        ho.sse_ping = 20ms;
        ho.api_keys = std::move(keys);
        ho.admin_keys = std::move(admin_keys);
        ho.admin_open = ho.admin_keys.empty(); // the model-management tests are not about roles
        ho.supervisor = sup;
        srv = std::make_unique<http::server>(sys, adm, ho);
        auto p = srv->start();
        REQUIRE(p.has_value());
        port = *p;
        // Ready once the model is loaded and routed (bounded wait).
        for (int i = 0; i < 500 && get("/health/ready").status != 200; ++i)
            std::this_thread::sleep_for(5ms);
    }
    ~live_server() {
        srv->stop();
        caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(adm, caf::exit_reason::user_shutdown);
    }

    reply request(bhttp::verb verb, const std::string& target, const std::string& body = {},
                  const std::string& ctype = "application/json", const std::string& auth = {}) {
        net::io_context ioc;
        beast::tcp_stream stream(ioc);
        stream.expires_after(10s);
        stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
        bhttp::request<bhttp::string_body> req{verb, target, 11};
        req.set(bhttp::field::host, "127.0.0.1");
        if (!auth.empty())
            req.set(bhttp::field::authorization, auth);
        if (!body.empty()) {
            req.set(bhttp::field::content_type, ctype);
            req.body() = body;
            req.prepare_payload();
        }
        bhttp::write(stream, req);
        beast::flat_buffer buf;
        bhttp::response<bhttp::string_body> res;
        beast::error_code ec;
        bhttp::read(stream, buf, res, ec);
        reply out;
        out.status = res.result_int();
        out.body = res.body();
        out.retry_after = std::string(res[bhttp::field::retry_after]);
        out.content_type = std::string(res[bhttp::field::content_type]);
        return out;
    }
    reply get(const std::string& target) { return request(bhttp::verb::get, target); }
    reply post(const std::string& target, const std::string& body) {
        return request(bhttp::verb::post, target, body);
    }
};

inline boost::json::object error_of(const reply& r) {
    auto v = boost::json::parse(r.body);
    return v.as_object().at("error").as_object();
}

} // namespace live_rig
