// The listener: start (TLS context, bind, listen, the io threads), the accept loop with its
// back-off when descriptors run out and its refusal past max_connections, the cut at the end of
// a drain, and the io threads' end. Each accepted socket becomes a connection through the
// factory given to start (connection.hpp).
#include "http/transport/listener.hpp"

#include "http/transport/connection.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
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

listener::listener(const transport_options& c, std::shared_ptr<metrics> mp)
    : conf(c)
    , metrics_ptr(std::move(mp))
    , m(*metrics_ptr) {
    next_id = conf.first_request_id;
}

std::uint32_t connection_registry::held(const std::string& peer) const {
    const auto it = per_peer.find(peer);
    return it == per_peer.end() ? 0u : it->second;
}

std::uint64_t connection_registry::reclaimable(const std::string* peer,
                                               steady::time_point stalled_since,
                                               const std::string* newcomer) const {
    const auto newcomer_holds = newcomer == nullptr ? 0u : held(*newcomer);
    const auto eligible = [&](const entry& e) {
        return (peer == nullptr || e.peer == *peer) &&
               (newcomer == nullptr || held(e.peer) >= newcomer_holds);
    };
    std::uint64_t best = 0;
    steady::time_point since{};
    for (const auto& [id, e] : conns)
        if (e.idle && eligible(e) && (best == 0 || e.idle_since < since)) {
            best = id;
            since = e.idle_since;
        }
    if (best != 0)
        return best;
    steady::time_point at{};
    for (const auto& [id, e] : conns)
        if (e.reading && e.progress_at <= stalled_since && eligible(e) &&
            (best == 0 || e.progress_at < at)) {
            best = id;
            at = e.progress_at;
        }
    return best;
}

std::uint64_t connection_registry::crowded_read(const std::string& peer) const {
    const std::string* crowded = nullptr;
    std::uint32_t most = 0;
    for (const auto& [p, n] : per_peer)
        if (n > most) {
            most = n;
            crowded = &p;
        }
    if (crowded == nullptr || most < held(peer) + 2)
        return 0;
    std::uint64_t best = 0;
    steady::time_point at{};
    for (const auto& [id, e] : conns)
        if (e.reading && e.peer == *crowded && (best == 0 || e.progress_at < at)) {
            best = id;
            at = e.progress_at;
        }
    return best;
}

std::optional<std::string> listener::admit(const std::string& peer, bool trusted_peer) {
    auto& reg = *connections;
    const auto stalled_since = steady::now() - conf.stalled_read_after;
    std::lock_guard lk(reg.mu);
    std::uint64_t victim = 0;
    bool crowded = false; ///< the victim is a read of the peer that holds the most
    const auto held = reg.per_peer.count(peer) > 0 ? reg.per_peer.at(peer) : 0u;
    if (!trusted_peer && held >= conf.max_connections_per_client) {
        // One client cannot hoard connections: its own oldest idle one makes room, if any.
        victim = reg.reclaimable(&peer, stalled_since);
        if (victim == 0)
            return "this client has max_connections_per_client (" +
                   std::to_string(conf.max_connections_per_client) +
                   ") connections open, none of them idle or stalled";
    } else if (reg.open.load() > static_cast<int>(conf.max_connections)) {
        // Counted open already: more than the cap is open now. Idle sockets never lock out a
        // working client: the oldest idle one closes (as nginx reuses its idle connections),
        // and so does a read that stalled (a request sent by halves holds no slot for long).
        victim = reg.reclaimable(nullptr, stalled_since, &peer);
        if (victim == 0) {
            victim = reg.crowded_read(peer);
            crowded = victim != 0;
        }
        if (victim == 0)
            return "the server has max_connections (" + std::to_string(conf.max_connections) +
                   ") connections open, none of them idle or stalled";
    }
    if (victim != 0) {
        auto& v = reg.conns.at(victim);
        v.idle = false; // chosen once
        v.reading = false;
        v.reclaim(crowded);
        ++reg.reclaimed;
        m.connection_reclaimed();
    }
    return std::nullopt;
}

// The accept loop never ends while the acceptor is open: every error re-arms it.
void listener::do_accept() {
    acceptor_->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
        if (ec == net::error::operation_aborted || !acceptor_->is_open())
            return; // closed by stop_io()
        if (ec)
            return on_accept_error(ec);
        beast::error_code pec;
        const auto ep = s.remote_endpoint(pec);
        const auto peer = pec ? std::string() : client_address(ep.address(), {}, {});
        const bool trusted_peer = !pec && proxies.contains(ep.address());
        auto conn = make_(std::move(s));
        if (auto refusal = admit(peer, trusted_peer))
            conn->refuse_overloaded(*refusal);
        else
            conn->run(peer);
        do_accept();
    });
}

void listener::on_accept_error(const beast::error_code& ec) {
    // Out of descriptors or kernel memory, accepting again at once would spin on the same
    // error: wait a moment (closing connections free descriptors). Any other error concerns one
    // connection (reset before it was taken): accept the next at once.
    const bool exhausted = ec == net::error::no_descriptors || ec.value() == ENFILE ||
                           ec == net::error::no_buffer_space || ec == net::error::no_memory;
    m.accept_failed(); // each one; the warning below at most once a second
    const auto now = steady::now();
    if (now - last_accept_warning_ > std::chrono::seconds(1)) {
        last_accept_warning_ = now;
        spdlog::warn("accept failed: {}{}", ec.message(),
                     exhausted ? " (retrying every 50 ms; raise the descriptor limit or lower "
                                 "max_connections)"
                               : "");
    }
    if (!exhausted)
        return do_accept();
    if (!accept_backoff_)
        accept_backoff_.emplace(acceptor_->get_executor());
    accept_backoff_->expires_after(std::chrono::milliseconds(50));
    accept_backoff_->async_wait([this](beast::error_code wec) {
        if (!wec && acceptor_->is_open())
            do_accept();
    });
}

result<std::uint16_t> listener::start(factory make) {
    make_ = std::move(make);
    beast::error_code ec;
    auto addr = net::ip::make_address(conf.address, ec);
    if (ec)
        return error{errc::invalid_argument,
                     "listen address '" + conf.address + "': " + ec.message()};
    auto parsed = trusted_proxies::parse(conf.trusted_proxies);
    BITNET_TRY(parsed);
    proxies = std::move(*parsed);
    if (!conf.tls_cert.empty() || !conf.tls_key.empty()) {
        auto ctx = load_tls_context(conf.tls_cert, conf.tls_key);
        BITNET_TRY(ctx);
        tls = std::make_unique<tls_contexts>(conf.tls_cert, conf.tls_key, std::move(*ctx));
    }
    tcp::endpoint ep{addr, conf.port};
    acceptor_.emplace(net::make_strand(ioc));
    acceptor_->open(ep.protocol(), ec);
    if (!ec)
        acceptor_->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec)
        acceptor_->bind(ep, ec);
    if (!ec)
        acceptor_->listen(net::socket_base::max_listen_connections, ec);
    if (ec)
        return error{errc::io_error, "cannot listen on " + conf.address + ":" +
                                         std::to_string(conf.port) + ": " + ec.message()};
    const auto port = acceptor_->local_endpoint().port();
    do_accept();
    for (unsigned t = 0; t < std::max(1u, conf.io_threads); ++t)
        threads_.emplace_back([this] { run_io(ioc); });
    return port;
}

void listener::cut_all() {
    std::vector<std::function<void()>> cuts;
    {
        std::lock_guard lk(connections->mu);
        for (const auto& [id, e] : connections->conns)
            cuts.push_back(e.cut);
    }
    for (auto& f : cuts)
        f();
}

std::size_t listener::open_connections() const {
    return static_cast<std::size_t>(std::max(0, connections->open.load()));
}

void listener::stop_io() {
    if (acceptor_)
        net::post(acceptor_->get_executor(), [this] {
            beast::error_code ec;
            acceptor_->close(ec);
        });
    ioc.stop();
    for (auto& t : threads_)
        if (t.joinable())
            t.join();
    threads_.clear();
}

} // namespace bitnet::http
