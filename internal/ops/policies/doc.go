// Package policies holds policies and smart contract interfaces as resources: the operations
// create_policy (V3, and V2/V1 without selectors), create_policies, update_policy (V2 and V1),
// delete_policy, delete_policies, create_smart_contract_interface and
// delete_smart_contract_interface; the queries get_policy, list_policies,
// get_policy_evaluations, get_smart_contract_interface and list_smart_contract_interfaces; and
// the records the policy engine reads (ListPolicies, InterfaceForAddress, ContractABI) and writes
// (SaveEvaluation). Evaluating policies is the engine's job (internal/policy's Decide, called
// from activity), never this package's.
//
// # Policies
//
// A policy (record kind "policy") is a name, an effect, three expressions of the policy language
// (condition, consensus, time; "" is absent) and notes. Everything is checked when it is
// written, so the engine only meets policies that compile:
//   - the effect is EFFECT_ALLOW or EFFECT_DENY;
//   - condition and consensus compile with policy.Compile and time with policy.CompileTime; a
//     failure is a 400 naming the request field, in Turnkey's words:
//     "parameters.condition: invalid policy condition: 1:17: expected ')' but found ','";
//   - the name is unique in the organization (the unique lookup key policy.name = org/name):
//     "parameters.policyName: policy label must be unique: ...", a 400 as in Turnkey;
//   - an organization has at most Limits.PoliciesPerOrg policies (100 by default).
//
// create_policies creates all of its policies or none: the first refusal fails the activity
// and its transaction is undone. update_policy (UPDATE_POLICY_V2's renamed fields
// policyName, policyEffect, policyCondition, policyConsensus, policyNotes, time) changes the
// fields given and re-checks the whole policy; an empty field keeps the stored value, since the
// wire types cannot tell "" from absent, so an expression cannot be cleared by update (delete
// and re-create the policy). CREATE_POLICY and CREATE_POLICY_V2 carry the selector language that
// predates conditions; its semantics are undocumented, so a policy with selectors is refused as
// unsupported (naming parameters.selectors) and one without selectors is stored with no
// condition or consensus.
//
// # Policy evaluations
//
// The engine records one Evaluation per vote (the initiator's submission is the first) with
// SaveEvaluation, inside the activity's transaction: record kind "policy_evaluation", owned by
// the activity's organization, found by the key policy_evaluation.activity = org/activityId.
// get_policy_evaluations returns them oldest first, and an empty list when none were stored
// (every activity before the engine evaluates policies). The record's shape is documented on
// Evaluation; its final outcome and per-policy error text are kept for operators and are not on
// the wire.
//
// # Smart contract interfaces
//
// An interface (record kind "smart_contract_interface") is an ABI or IDL uploaded for one
// contract address or program id, so that policies can read decoded calldata
// (eth.tx.function_name, contract_call_args, solana parsed_instruction_data):
//   - SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM: the address is 0x and 40 hex digits, stored
//     lowercase; the interface is a Solidity JSON ABI (CheckABI: an array of entries whose
//     types, names and parameter types are valid);
//   - SMART_CONTRACT_INTERFACE_TYPE_SOLANA: the address is base58 of 32 bytes, stored as given;
//     the interface is an Anchor IDL (CheckIDL: an object with named instructions).
//
// The JSON is stored as uploaded (at most MaxInterfaceBytes; an organization keeps at most
// Limits.ContractInterfacesPerOrg of them and MaxContractInterfaceBytesPerOrg together). An ABI
// must also keep within the limits ethereum.ParseABI parses it under (ethereum.CheckABILimits: entries,
// tuple depth, array dimensions, fixed-size arrays, repeated names), an IDL within
// MaxIDLInstructions; docs/limits.md §4.3 lists them. An organization has one interface
// per address (unique key smart_contract_interface.address = org/address) so the evaluator
// never chooses between two; InterfaceForAddress finds it, and ContractABI its ABI parsed (once
// per process: see its cache). Interfaces are not updated: delete and re-create; the cache of
// parsed ABIs relies on it.
//
// # Access
//
// Until the policy engine authorizes activities, every write here is for root users only
// (activity.AccessRoot); queries are open to every user of the organization and its parent.
package policies
