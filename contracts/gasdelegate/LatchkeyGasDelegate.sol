// Latchkey's EIP-7702 gas-station delegate, written for this repository (no SPDX line: the contract is
// under the repository's own terms).
//
// An account delegates to this code with a type-4 authorization; from then on anyone (Latchkey's
// paymaster) may call executeBatch on the account, and the account's own key authorizes each batch by
// signing an EIP-712 BatchExecution. The interface (domain name and version, type strings, the packed
// signature||nonce||deadline argument, the error names, the nonce's storage slot) is the one
// Turnkey's TKGasDelegate speaks, so both can serve the same accounts; docs/gas-station.md explains it.
pragma solidity 0.8.30;

contract LatchkeyGasDelegate {
    struct Call {
        address to;
        uint256 value;
        bytes data;
    }

    // The delegate's state in the account's own storage, at the slot Turnkey's TKGasDelegate uses:
    // (uint256(keccak256("TKGasDelegate.state")) - 1) & ~0xff. That is ERC-7201's namespace formula
    // without its outer keccak256 (ERC-7201 proper would give 0x97228e65...4200 for this namespace);
    // we keep Turnkey's slot on purpose. Both delegates share one EIP-712 domain, so an account that
    // moves from one to the other must keep one nonce, or a signature already spent under the first
    // could be replayed under the second. The slot's top 128 bits are left alone.
    struct State {
        uint128 nonce;
    }

    bytes32 private constant STATE_SLOT = 0x34d5be385818fa5c8c4e7f9d5a028251d28ebab8aaf203a072d1dde2d49a1100;

    uint256 public constant MAX_BATCH_SIZE = 20;

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant BATCH_EXECUTION_TYPEHASH =
        keccak256("BatchExecution(uint128 nonce,uint32 deadline,Call[] calls)Call(address to,uint256 value,bytes data)");
    bytes32 private constant CALL_TYPEHASH = keccak256("Call(address to,uint256 value,bytes data)");
    string private constant NAME = "TKGasDelegate";
    string private constant VERSION = "1.1";

    // secp256k1's n / 2: a larger s is the malleable twin of a valid signature.
    uint256 private constant HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    error BatchSizeInvalid();
    error DeadlineExceeded();
    error InvalidNonce();
    error NotSelf();
    error ExecutionFailed();
    error InvalidSignatureData();

    /// Runs every call of a batch the account signed, or none: one failing call reverts them all.
    /// data is signature(65: r, s, v) || nonce(16, big-endian) || deadline(4, big-endian unix seconds).
    function executeBatch(Call[] calldata calls, bytes calldata data) external {
        if (data.length != 85) revert InvalidSignatureData();
        uint128 batchNonce = uint128(bytes16(data[65:81]));
        uint32 deadline = uint32(bytes4(data[81:85]));
        if (block.timestamp > deadline) revert DeadlineExceeded();
        bytes32 digest = _hashTypedData(_hashBatch(batchNonce, deadline, calls));
        if (!_signedBySelf(digest, data[0:65])) revert NotSelf();
        State storage state = _state();
        if (batchNonce != state.nonce) revert InvalidNonce();
        // Consumed before any call runs, so a call that re-enters cannot spend the same signature.
        state.nonce = batchNonce + 1;
        for (uint256 i = 0; i < calls.length; i++) {
            address to = calls[i].to;
            uint256 value = calls[i].value;
            bytes calldata callData = calls[i].data;
            bool ok;
            // Each call's data goes to the same scratch memory past the free pointer, and its return
            // data is never copied: a callee cannot make the paymaster pay for memory by returning a
            // large answer, and 20 calls do not grow memory 20 times.
            assembly ("memory-safe") {
                let ptr := mload(0x40)
                calldatacopy(ptr, callData.offset, callData.length)
                ok := call(gas(), to, value, ptr, callData.length, 0, 0)
            }
            if (!ok) revert ExecutionFailed();
        }
    }

    /// The next nonce a BatchExecution must carry.
    function nonce() external view returns (uint128) {
        return _state().nonce;
    }

    /// The EIP-712 digest the account's key signs for a batch (for clients that check their own).
    function hashBatchExecution(uint128 batchNonce, uint32 deadline, Call[] calldata calls)
        external
        view
        returns (bytes32)
    {
        return _hashTypedData(_hashBatch(batchNonce, deadline, calls));
    }

    /// ERC-5267: the EIP-712 domain, bound to this chain and to the delegating account.
    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory name,
            string memory version,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        return (hex"0f", NAME, VERSION, block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    /// ERC-1271: a hash signed by the account's own key.
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length == 65 && _signedBySelf(hash, signature)) return 0x1626ba7e;
        return 0xffffffff;
    }

    receive() external payable {}

    function onERC721Received(address, address, uint256, bytes calldata) external pure returns (bytes4) {
        return 0x150b7a02;
    }

    function onERC1155Received(address, address, uint256, uint256, bytes calldata) external pure returns (bytes4) {
        return 0xf23a6e61;
    }

    function onERC1155BatchReceived(address, address, uint256[] calldata, uint256[] calldata, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        return 0xbc197c81;
    }

    function _hashBatch(uint128 batchNonce, uint32 deadline, Call[] calldata calls) private pure returns (bytes32) {
        if (calls.length == 0 || calls.length > MAX_BATCH_SIZE) revert BatchSizeInvalid();
        bytes32[] memory callHashes = new bytes32[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            callHashes[i] = keccak256(abi.encode(CALL_TYPEHASH, calls[i].to, calls[i].value, keccak256(calls[i].data)));
        }
        return keccak256(
            abi.encode(BATCH_EXECUTION_TYPEHASH, batchNonce, deadline, keccak256(abi.encodePacked(callHashes)))
        );
    }

    // The domain is computed on every call, never cached: under EIP-7702 address(this) is the account,
    // which differs for every account that delegates here.
    function _hashTypedData(bytes32 structHash) private view returns (bytes32) {
        bytes32 domain = keccak256(
            abi.encode(DOMAIN_TYPEHASH, keccak256(bytes(NAME)), keccak256(bytes(VERSION)), block.chainid, address(this))
        );
        return keccak256(abi.encodePacked(hex"1901", domain, structHash));
    }

    function _signedBySelf(bytes32 digest, bytes calldata signature) private view returns (bool) {
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > HALF_N || (v != 27 && v != 28)) return false;
        address signer = ecrecover(digest, v, r, s);
        return signer != address(0) && signer == address(this);
    }

    function _state() private pure returns (State storage state) {
        assembly {
            state.slot := STATE_SLOT
        }
    }
}
