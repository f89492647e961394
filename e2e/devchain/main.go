// Command devchain is the end-to-end suite's EVM development node: go-ethereum's simulated
// backend (a real EVM and transaction pool, in memory) serving JSON-RPC on loopback, with chain
// id 11155111 so it stands in for Sepolia, one funded developer account, and a block sealed
// every 200 ms. It prints {"rpcUrl": ..., "devPrivateKey": ...} on its first line of output
// and runs until stdin closes or it is killed.
package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
)

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func main() {
	key, _ := crypto.GenerateKey()
	dev := crypto.PubkeyToAddress(key.PublicKey)
	port := freePort()
	balance, _ := new(big.Int).SetString("1000000000000000000000000", 10) // 1,000,000 ETH
	b := simulated.NewBackend(types.GenesisAlloc{dev: {Balance: balance}}, func(n *node.Config, e *ethconfig.Config) {
		n.HTTPHost, n.HTTPPort, n.HTTPModules = "127.0.0.1", port, []string{"eth", "net", "web3"}
		cfg := *e.Genesis.Config
		cfg.ChainID = big.NewInt(11155111)
		e.Genesis.Config, e.NetworkId = &cfg, 11155111
	})
	defer b.Close()
	out, _ := json.Marshal(map[string]string{"rpcUrl": fmt.Sprintf("http://127.0.0.1:%d", port), "devPrivateKey": "0x" + hex.EncodeToString(crypto.FromECDSA(key)),
		"devAddress": dev.Hex()})
	fmt.Println(string(out))
	go func() { // exit when the test runner goes away
		buf := make([]byte, 1)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				os.Exit(0)
			}
		}
	}()
	for range time.Tick(200 * time.Millisecond) {
		b.Commit()
	}
}
