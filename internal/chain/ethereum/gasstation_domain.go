package ethereum

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"unicode/utf8"
)

// ErrInvalidDelegateDomain is wrapped by every refusal of an eip712Domain() answer.
var ErrInvalidDelegateDomain = errors.New("invalid eip712Domain answer")

// The bounds of an eip712Domain() answer DecodeEIP712Domain accepts. The answer comes from an RPC
// node, untrusted: anything larger is refused before it is read, so decoding is linear in at most
// maxDomainAnswer bytes.
const (
	maxDomainAnswer     = 4096
	maxDomainString     = 256
	maxDomainExtensions = 32
)

// DelegateDomain is the ERC-5267 eip712Domain() answer of a delegate: which fields the domain uses
// (a bit mask: name 0x01, version 0x02, chainId 0x04, verifyingContract 0x08, salt 0x10) and their
// values.
type DelegateDomain struct {
	Fields            byte
	Name, Version     string
	ChainID           *big.Int
	VerifyingContract [20]byte
	Salt              [32]byte
	Extensions        []*big.Int
}

func domainErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidDelegateDomain, fmt.Sprintf(format, a...))
}

// DecodeEIP712Domain decodes the ABI-encoded return data of eip712Domain(), that is
// (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract,
// bytes32 salt, uint256[] extensions), strictly: offsets inside the answer, padding zero, strings
// UTF-8, sizes within the bounds above.
func DecodeEIP712Domain(answer []byte) (*DelegateDomain, error) {
	if len(answer) > maxDomainAnswer {
		return nil, domainErr("%d bytes, more than %d", len(answer), maxDomainAnswer)
	}
	if len(answer) < 7*32 {
		return nil, domainErr("%d bytes, shorter than its 7-word head", len(answer))
	}
	head := func(i int) []byte { return answer[32*i : 32*i+32] }
	d := &DelegateDomain{Fields: head(0)[0]}
	if !allZero(head(0)[1:]) {
		return nil, domainErr("fields: not a bytes1")
	}
	var err error
	if d.Name, err = domainString(answer, head(1), "name"); err != nil {
		return nil, err
	}
	if d.Version, err = domainString(answer, head(2), "version"); err != nil {
		return nil, err
	}
	d.ChainID = new(big.Int).SetBytes(head(3))
	if !allZero(head(4)[:12]) {
		return nil, domainErr("verifyingContract: not an address")
	}
	d.VerifyingContract = [20]byte(head(4)[12:])
	d.Salt = [32]byte(head(5))
	at, n, err := domainDynamic(answer, head(6), "extensions")
	if err != nil {
		return nil, err
	}
	if n > maxDomainExtensions || n > (len(answer)-at)/32 {
		return nil, domainErr("extensions: %d entries do not fit (at most %d)", n, maxDomainExtensions)
	}
	d.Extensions = make([]*big.Int, n)
	for i := range n {
		d.Extensions[i] = new(big.Int).SetBytes(answer[at+32*i : at+32*i+32])
	}
	return d, nil
}

// domainDynamic follows a head word's offset to a dynamic value: it returns where the value's
// content starts and the length word found there, both checked to lie inside the answer.
func domainDynamic(answer, offsetWord []byte, field string) (at, n int, err error) {
	offset, ok := abiWordInt(offsetWord)
	if !ok || offset%32 != 0 || offset < 7*32 || offset > len(answer)-32 {
		return 0, 0, domainErr("%s: offset outside the answer", field)
	}
	n, ok = abiWordInt(answer[offset : offset+32])
	if !ok || n > len(answer) {
		return 0, 0, domainErr("%s: length outside the answer", field)
	}
	return offset + 32, n, nil
}

func domainString(answer, offsetWord []byte, field string) (string, error) {
	at, n, err := domainDynamic(answer, offsetWord, field)
	if err != nil {
		return "", err
	}
	if n > maxDomainString {
		return "", domainErr("%s: %d bytes, more than %d", field, n, maxDomainString)
	}
	if paddedLen(n) > len(answer)-at {
		return "", domainErr("%s: runs past the end of the answer", field)
	}
	if !allZero(answer[at+n : at+paddedLen(n)]) {
		return "", domainErr("%s: padding not zero", field)
	}
	s := answer[at : at+n]
	if !utf8.Valid(s) {
		return "", domainErr("%s: not UTF-8", field)
	}
	return string(s), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// CheckDelegate is the start-up check of a configured delegate: its eip712Domain() answer, read at
// the delegate's own address, must name the gas-station domain (DelegateDomainName, version
// DelegateDomainVersion), the configured chain, and that address, with no salt and no extensions;
// otherwise the accounts' signatures would not be accepted on chain, or would mean something else.
func (d *DelegateDomain) CheckDelegate(chainID *big.Int, delegate [20]byte) error {
	switch {
	case d.Fields != 0x0f:
		return domainErr("fields are 0x%02x, not 0x0f (name, version, chainId, verifyingContract)", d.Fields)
	case d.Name != DelegateDomainName || d.Version != DelegateDomainVersion:
		return domainErr("domain %q version %q, not %q version %q", d.Name, d.Version,
			DelegateDomainName, DelegateDomainVersion)
	case chainID == nil || d.ChainID.Cmp(chainID) != 0:
		return domainErr("chain id %s, not the configured %s", d.ChainID, chainID)
	case d.VerifyingContract != delegate:
		return domainErr("verifyingContract 0x%x, not the delegate's own address 0x%x", d.VerifyingContract, delegate)
	case !bytes.Equal(d.Salt[:], make([]byte, 32)) || len(d.Extensions) != 0:
		return domainErr("a salt or extensions the gas-station domain does not have")
	}
	return nil
}
