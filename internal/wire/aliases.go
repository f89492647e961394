package wire

// The swagger describes caip2 of these requests as accepting the Solana aliases
// ("Human-readable Solana aliases ('solana:mainnet', 'solana:devnet') are also accepted and
// normalized to canonical CAIP-2 values") but leaves them out of the enum; accept them as the
// description says.
func init() {
	for _, v := range []*[]string{&getWalletAddressBalancesRequestCaip2Values, &listSupportedAssetsRequestCaip2Values} {
		*v = append(*v, "solana:mainnet", "solana:devnet")
	}
}
