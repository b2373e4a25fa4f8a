// The one place where message types get CAF type ids and atoms are declared. Atoms are verbs of
// at most 10 characters (CAF 0.17). Register with msg::register_messages(cfg) in every process,
// under the same names (remoting checks typed interfaces by name).
#pragma once

#include "messages/orders.hpp"
#include "messages/types.hpp"

#include <caf/atom.hpp>
#include <caf/type_id.hpp>

CAF_BEGIN_TYPE_ID_BLOCK(bitnet, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(bitnet, (bitnet::model::sampling_params))
CAF_ADD_TYPE_ID(bitnet, (bitnet::model::seq_chunk))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::generate_request))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::token_event))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::completion))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::step_chunk))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::step_batch))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::sampled_token))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::step_result))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::executor_info))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::batcher_stats))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::model_status))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::load_order))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::operation_ticket))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::warmup_report))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::chat_message))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::text_prompt))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::executor_order))
CAF_ADD_TYPE_ID(bitnet, (bitnet::msg::batcher_order))
CAF_ADD_ATOM(bitnet, bitnet::msg, submit_atom, "submit")
CAF_ADD_ATOM(bitnet, bitnet::msg, cancel_atom, "cancel")
CAF_ADD_ATOM(bitnet, bitnet::msg, token_atom, "token")
CAF_ADD_ATOM(bitnet, bitnet::msg, done_atom, "done")
CAF_ADD_ATOM(bitnet, bitnet::msg, fail_atom, "fail")
CAF_ADD_ATOM(bitnet, bitnet::msg, step_atom, "step")
CAF_ADD_ATOM(bitnet, bitnet::msg, info_atom, "info")
CAF_ADD_ATOM(bitnet, bitnet::msg, stats_atom, "stats")
CAF_ADD_ATOM(bitnet, bitnet::msg, tick_atom, "tick")
CAF_ADD_ATOM(bitnet, bitnet::msg, drain_atom, "drain")
CAF_ADD_ATOM(bitnet, bitnet::msg, ready_atom, "ready")
CAF_ADD_ATOM(bitnet, bitnet::msg, route_atom, "route")
CAF_ADD_ATOM(bitnet, bitnet::msg, models_atom, "models")
CAF_ADD_ATOM(bitnet, bitnet::msg, load_atom, "load")
CAF_ADD_ATOM(bitnet, bitnet::msg, rollback_atom, "rollback")
CAF_ADD_ATOM(bitnet, bitnet::msg, unload_atom, "unload")
CAF_ADD_ATOM(bitnet, bitnet::msg, warmup_atom, "warmup")
CAF_ADD_ATOM(bitnet, bitnet::msg, stage_atom, "stage")
CAF_ADD_ATOM(bitnet, bitnet::msg, crash_atom, "crash")
CAF_ADD_ATOM(bitnet, bitnet::msg, encode_atom, "encode")
CAF_ADD_ATOM(bitnet, bitnet::msg, tokenize_atom, "tokenize")
CAF_ADD_ATOM(bitnet, bitnet::msg, detokenize_atom, "detokenize")
CAF_END_TYPE_ID_BLOCK(bitnet)
