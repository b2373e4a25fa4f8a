// The typed-actor interfaces (handle types). Who sends what:
//   http bridge --submit(generate_request, sink)--> admission --> batcher (of the model)
//   batcher --step(step_batch)--> executor --> step_result
//   batcher --token(token_event) / done(completion) / fail(id, error)--> sink (http bridge)
//   http bridge --cancel(id)--> admission --> batcher   (client gone)
//   anyone --route(alias)--> supervisor --> batcher handle
//   admission --encode(text_prompt)--> text (of the version it routes to) --> token ids
//   http bridge --tokenize/detokenize(alias, ...)--> admission --> text (of the serving version)
#pragma once

#include "messages/type_ids.hpp"

#include <caf/error.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::msg {

/// Receives one request's output. Implemented by http/bridge (one sink per request).
using sink_actor =
    caf::typed_actor<caf::reacts_to<token_atom, token_event>, caf::reacts_to<done_atom, completion>,
                     caf::reacts_to<fail_atom, request_id, caf::error>>;

/// Owns a model::engine on its own thread (spawned detached): runs steps, samples.
/// `warmup(n)` runs a greedy generation of n tokens straight on the engine (before the batcher
/// exists; it uses a sequence id the batcher never does) and checks every logit is finite.
using executor_actor =
    caf::typed_actor<caf::replies_to<step_atom, step_batch>::with<step_result>,
                     caf::replies_to<info_atom>::with<executor_info>,
                     caf::replies_to<warmup_atom, std::uint32_t>::with<warmup_report>>;

/// One per model: continuous batching around sched::policy, one step in flight.
/// `submit` answers the request id once queued (or an error: prompt_too_long, ...); output goes
/// to the sink. `tick` is its timer (deadlines while nothing runs).
using batcher_actor =
    caf::typed_actor<caf::replies_to<submit_atom, generate_request, sink_actor>::with<request_id>,
                     caf::reacts_to<cancel_atom, request_id>, caf::reacts_to<tick_atom>,
                     caf::replies_to<stats_atom>::with<batcher_stats>>;

/// The text side of one model version (its tokenizer and chat template), one per version beside
/// its batcher, on a thread of its own (tokenizing a long prompt stalls no batcher and no asio
/// thread). `encode` turns an inference request's text or chat prompt into token ids as the
/// request will run (BOS when asked and the model expects it, control tokens written in the text
/// parsed, chat through the template); its errors name the request field ("prompt" or
/// "messages"): invalid_argument (no tokenizer, or no tokens), tokenizer_error. `tokenize(text,
/// add_bos, parse_special)` and `detokenize(ids)` serve /v1/tokenize and /v1/detokenize
/// (invalid_argument for an id outside the vocabulary, or without a tokenizer). `render` answers
/// a chat prompt's text as the template renders it, before tokenization (/apply-template).
using text_actor =
    caf::typed_actor<caf::replies_to<encode_atom, text_prompt>::with<std::vector<token_id>>,
                     caf::replies_to<render_atom, text_prompt>::with<std::string>,
                     caf::replies_to<tokenize_atom, tokenize_order>::with<std::vector<token_id>>,
                     caf::replies_to<detokenize_atom, std::vector<token_id>>::with<std::string>>;

/// Front door: caps, priorities, readiness, draining. In a cluster
/// (actors/cluster/cluster_node.hpp) it also sees every other node's replicas: `cluster(replicas)`
/// replaces them (the cluster actor sends the replicas of the nodes that are up at every change),
/// and a request goes to the replica of its alias with the least outstanding work, here or on
/// another node; a request placed on another node runs through this node's stream relay. `replicas`
/// answers this node's own replicas with their load (for the heartbeat); `down(node)` drops a lost
/// node's replicas and has the relay move its streams; `place(replica_query)` picks the
/// replica a lost stream continues on: the same version, on a node that is up (replica_lost when
/// none), never the batcher `gone` (null, or one that stopped under the stream: a crash's restart,
/// an unload), which is dropped from the view and from later heartbeats' views. `submit` errors:
/// invalid_argument (a prompt or stop token id outside the vocabulary), prompt_too_long (no room
/// left in the context or the KV pool), queue_full (cap hit or draining; the message says which),
/// not_found (unknown model), unavailable (the model's last version failed, or its first is still
/// loading: then with a Retry-After), timeout (deadline
/// passed while queued). `ready` answers readiness and, when not ready, why. `route(alias, batcher,
/// text, info)` is sent by the supervisor when a model becomes ready or is swapped (a null batcher
/// removes the alias); `text` is the same version's text actor and `info` its executor_info, whose
/// vocabulary, context and KV pool admission checks every request against (a bad id or an over-long
/// prompt is a 400 at the door, never a failed step or a 503 to retry). A text or chat prompt is
/// tokenized by the text actor of the version the request was routed to on arrival, and runs on
/// that version's batcher even if the alias flips meanwhile. Admission answers a route once the new
/// route is in place and no request routed to the old one is still being tokenized, so every
/// request it handed to the old version is already in that batcher's mailbox by then (the old
/// version's drain starts from that answer). `fail(alias_failure)`, also from the supervisor: the
/// alias's last version failed (its load, or its restarts ran out) and nothing serves it; requests
/// for it are refused with `unavailable` and why until a route for it comes. `load(alias)`, from
/// the supervisor too: a new version of an alias that nothing serves is loading, or the serving
/// version's pair crashed and restarts in place (its route goes); requests for it are refused with
/// `unavailable` and a Retry-After until its route or its failure. `tokenize`, `detokenize`,
/// `encode` and `render` (alias first) go to the serving version's text actor (not_found for an
/// unknown alias). `tick` is admission's own timer (queue-depth polling for caps and Retry-After).
using admission_actor = caf::typed_actor<
    caf::replies_to<submit_atom, generate_request, sink_actor>::with<request_id>,
    caf::reacts_to<cancel_atom, request_id>, caf::reacts_to<drain_atom>,
    caf::replies_to<ready_atom>::with<bool, std::string>,
    caf::replies_to<route_atom, std::string, batcher_actor, text_actor, executor_info>::with<bool>,
    caf::reacts_to<fail_atom, alias_failure>, caf::reacts_to<load_atom, std::string>,
    caf::replies_to<tokenize_atom, std::string, tokenize_order>::with<std::vector<token_id>>,
    caf::replies_to<encode_atom, std::string, text_prompt>::with<std::vector<token_id>>,
    caf::replies_to<render_atom, std::string, text_prompt>::with<std::string>,
    caf::replies_to<detokenize_atom, std::string, std::vector<token_id>>::with<std::string>,
    caf::reacts_to<tick_atom>, caf::replies_to<stats_atom>::with<std::vector<batcher_stats>>,
    caf::replies_to<replicas_atom>::with<std::vector<replica_view>>,
    caf::reacts_to<cluster_atom, std::vector<replica_view>>, caf::reacts_to<down_atom, std::string>,
    caf::replies_to<place_atom, replica_query>::with<replica_view>>;

/// Owns model versions and their batcher/executor pairs (docs/ARCHITECTURE.md §2): answers
/// routing lookups, lists every alias (versions, operations) for /v1/models and /health, and runs
/// the model-management operations. `load`, `rollback` and `unload` answer at once with a ticket
/// (accepted with an operation id, or refused); progress shows in `models`. `crash(alias)` kills
/// the alias's serving executor with an error, as a crash would (the test hook; http/ exposes it
/// only when test hooks are on). `stalled(executor, why)` is a batcher's watchdog: that executor
/// spent longer than step_timeout_ms in one step, and is replaced as if it had crashed (its thread
/// is told to stop at its next check). `stage` and `tick` are internal: a loader thread's progress
/// (load_progress: operation serial, stage, failure) and the supervisor's drain timer.
using supervisor_actor =
    caf::typed_actor<caf::replies_to<route_atom, std::string>::with<batcher_actor>,
                     caf::replies_to<info_atom, std::string>::with<executor_info>,
                     caf::replies_to<models_atom>::with<std::vector<model_status>>,
                     caf::replies_to<load_atom, load_order>::with<operation_ticket>,
                     caf::replies_to<rollback_atom, std::string>::with<operation_ticket>,
                     caf::replies_to<unload_atom, std::string>::with<operation_ticket>,
                     caf::reacts_to<crash_atom, std::string>,
                     caf::reacts_to<stalled_atom, executor_actor, std::string>,
                     caf::reacts_to<stage_atom, load_progress>, caf::reacts_to<tick_atom>>;

/// The stream relay of a node (actors/cluster/stream_relay.hpp): the requests this node's admission
/// placed on another node's replica. `submit(req, sink, replica)` places one there (answering as
/// the batcher does); `stream(batch)` is a batcher's step output for them, handed to each request's
/// sink; `down(node)` moves the streams running on a lost node to another replica of the same
/// version (or ends them with replica_lost); `cancel(id)` follows a request wherever it runs.
using relay_actor = caf::typed_actor<
    caf::replies_to<submit_atom, generate_request, sink_actor, replica_view>::with<request_id>,
    caf::reacts_to<stream_atom, stream_batch>, caf::reacts_to<down_atom, std::string>,
    caf::reacts_to<cancel_atom, request_id>>;

/// One per node (actors/cluster/cluster_node.hpp): membership, heartbeats, failure detection and
/// the rolling model operations. Peers call `join(report, proof) -> (report, proof)` when they
/// connect and send `heartbeat(report)` every cluster_heartbeat_ms; `members` answers GET
/// /v1/cluster; `roll` starts a rolling operation over the nodes that serve an alias (answered at
/// once with a ticket, like the supervisor's operations; only from this node's own actors);
/// `node_op` is a peer's roll ordering this node (checked: a member, and the admin key's proof);
/// `models` is this node's supervisor's list for a member polling its roll; `ready(address)` starts
/// it once it listens at `address` (what peers are told to dial); `tick` is its timer.
using cluster_actor = caf::typed_actor<
    caf::replies_to<join_atom, node_report, join_proof>::with<node_report, join_proof>,
    caf::reacts_to<heartbeat_atom, node_report>, caf::replies_to<members_atom>::with<cluster_view>,
    caf::replies_to<roll_atom, roll_order>::with<operation_ticket>,
    caf::replies_to<node_op_atom, node_order>::with<operation_ticket>,
    caf::replies_to<models_atom>::with<std::vector<model_status>>,
    caf::reacts_to<ready_atom, std::string>, caf::reacts_to<tick_atom>>;

} // namespace bitnet::msg
