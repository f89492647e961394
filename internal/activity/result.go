package activity

import (
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/latchkey/latchkey/internal/wire"
)

var resultMembers = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[wire.Result]()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
})

// resultMember is the member of Result that holds the result of an activity submitted with the
// given intent member: fooIntentVn answers in the newest fooResultVk with k <= n, else fooResult
// (the same rule the SDKs' generated clients follow; create_policy V3 answers createPolicyResult).
// fallback is used when no such member exists.
func resultMember(intentMember, fallback string) string {
	base, version, _ := strings.Cut(intentMember, "Intent")
	n := 0
	if strings.HasPrefix(version, "V") {
		n, _ = strconv.Atoi(version[1:])
	}
	members := resultMembers()
	for k := n; k >= 2; k-- {
		if m := base + "ResultV" + strconv.Itoa(k); members[m] {
			return m
		}
	}
	if m := base + "Result"; members[m] {
		return m
	}
	return fallback
}
