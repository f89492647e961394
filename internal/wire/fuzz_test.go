package wire

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeValidate feeds arbitrary bytes to the decoder and Validate of a
// few request types, and of every version of one submit path: no panic.
func FuzzDecodeValidate(f *testing.F) {
	f.Add([]byte(subOrgV8))
	f.Add([]byte(`{"type":"ACTIVITY_TYPE_CREATE_USERS_V4","parameters":{"users":[{"userName":""}]}}`))
	f.Add([]byte(`{"parameters":{"rootUsers":[null,{}],"wallet":{"accounts":[{"curve":"X"}]}}}`))
	f.Add([]byte(`{"organizationId":"o","activityId":"a"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	newTypes := []func() Validator{
		func() Validator { return new(CreateSubOrganizationRequest) },
		func() Validator { return new(CreateUsersRequest) },
		func() Validator { return new(SignRawPayloadRequest) },
		func() Validator { return new(GetActivityRequest) },
		func() Validator { return new(Activity) },
		func() Validator { return new(SubmitEnvelope) },
	}
	op, _ := Lookup(Submit, "create_sub_organization")
	for _, v := range op.Versions {
		newTypes = append(newTypes, v.NewIntent)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, newType := range newTypes {
			v := newType()
			if json.Unmarshal(data, v) != nil {
				continue
			}
			if err := v.Validate("parameters"); err != nil {
				if _, ok := err.(*FieldError); !ok {
					t.Fatalf("%T.Validate returned %T", v, err)
				}
			}
		}
	})
}
