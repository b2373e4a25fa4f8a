// The server facade: the listener started with a factory that makes each accepted connection a
// session (session.hpp), the drain (begin_drain, cut_all), and stop, which ends every request's
// sink before the io_context goes. The state they share is server::impl (server_impl.hpp).
#include "http/routes/server.hpp"

#include "http/routes/server_impl.hpp"
#include "http/routes/session.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace bitnet::http {

server::server(caf::actor_system& sys, msg::admission_actor admission, server_options opt)
    : impl_(std::make_unique<impl>(sys, std::move(admission), std::move(opt))) {}

server::~server() {
    stop();
}

result<std::uint16_t> server::start() {
    auto& i = *impl_;
    return i.start([&i](listener::tcp::socket&& s) -> std::shared_ptr<connection> {
        return std::make_shared<session>(std::move(s), i);
    });
}

result<void> server::reload_tls() {
    if (!impl_->tls)
        return {};
    auto r = impl_->tls->reload();
    impl_->m.tls_reload(r.has_value());
    return r;
}

void server::begin_drain() {
    impl_->draining = true;
}

std::size_t server::cut_all() {
    const auto n = active_requests();
    impl_->cut_all();
    return n;
}

std::size_t server::active_requests() const {
    return static_cast<std::size_t>(std::max(0, impl_->requests->calls.load()));
}

std::size_t server::open_connections() const {
    return impl_->open_connections();
}

void server::stop() {
    if (!impl_)
        return;
    impl_->stop_io();
    // A sink (on a CAF thread) may still hold its session, whose socket and timers need the
    // io_context this server owns: end every sink and wait (bounded) until none holds a session,
    // so that no session outlives the io_context.
    auto& reqs = *impl_->requests;
    std::vector<caf::actor> sinks;
    {
        std::lock_guard lk(reqs.mu);
        for (const auto& [id, sink] : reqs.sinks)
            sinks.push_back(sink);
    }
    for (const auto& sink : sinks)
        caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
    for (int i = 0; i < 500 && reqs.sink_targets->load() > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (const int left = reqs.sink_targets->load(); left > 0)
        spdlog::warn("http stop: {} request sink(s) still hold a connection after 5 s", left);
}

} // namespace bitnet::http
