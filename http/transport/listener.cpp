// The listener and the server's lifecycle: start (bind, listen, the io threads), the accept
// loop with its back-off when descriptors run out and its refusal past max_connections, the
// drain (begin_drain, cut_all), and stop. Connections are sessions (session.hpp); the state
// they share is server::impl (server_impl.hpp).
#include "http/server.hpp"

#include "http/server_impl.hpp"
#include "http/session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>

namespace bitnet::http {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;

namespace {

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
    if (!i.opt.tls_cert.empty() || !i.opt.tls_key.empty()) {
        auto ctx = load_tls_context(i.opt.tls_cert, i.opt.tls_key);
        BITNET_TRY(ctx);
        i.tls = std::make_unique<tls_contexts>(i.opt.tls_cert, i.opt.tls_key, std::move(*ctx));
    }
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
    // A sink (on a CAF thread) may still hold its session, whose socket and timers need the
    // io_context this server owns: end every sink and wait (bounded) until none holds a session,
    // so that no session outlives the io_context.
    std::vector<caf::actor> sinks;
    {
        std::lock_guard lk(impl_->sessions->mu);
        for (const auto& [id, sink] : impl_->sessions->sinks)
            sinks.push_back(sink);
    }
    for (const auto& sink : sinks)
        caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
    for (int i = 0; i < 500 && impl_->sessions->sink_targets->load() > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (const int left = impl_->sessions->sink_targets->load(); left > 0)
        spdlog::warn("http stop: {} request sink(s) still hold a connection after 5 s", left);
}

} // namespace bitnet::http
