package wallets

import (
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

func (d Deps) registerKeys(reg *activity.Registry) {
	reg.Submit(
		activity.Operation{
			Path:   "create_private_keys",
			Access: activity.AccessRoot,
			Execute: activity.OnAny(
				d.createPrivateKeys,
				(*wire.CreatePrivateKeysIntentV2)(nil),
				(*wire.CreatePrivateKeysIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_private_keys",
			Access:  activity.AccessRoot,
			Execute: activity.On(deletePrivateKeys),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "create_private_key_tag",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.createPKTag),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "update_private_key_tag",
			Access:  activity.AccessRoot,
			Execute: activity.On(updatePKTag),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_private_key_tags",
			Access:  activity.AccessRoot,
			Execute: activity.On(deletePKTags),
		},
	)
	reg.Query(activity.QueryOp{Path: "get_private_key", Execute: activity.Query(getPrivateKey)})
	reg.Query(activity.QueryOp{Path: "list_private_keys", Execute: activity.Query(listPrivateKeys)})
	reg.Query(activity.QueryOp{Path: "list_private_key_tags", Execute: activity.Query(listPKTags)})
}

// keyAddresses derives the addresses of a key for formats.
func keyAddresses(field, curve string, pub []byte, formats []wire.AddressFormat) ([]Addr, error) {
	out := make([]Addr, 0, len(formats))
	for i, f := range formats {
		if err := address.CheckCurve(string(f), curve); err != nil {
			return nil, apierr.Invalid(fieldIdx(field, i), "%v", err)
		}
		a, err := address.Derive(string(f), curve, pub)
		if err != nil {
			return nil, apierr.Invalid(fieldIdx(field, i), "%v", err)
		}
		out = append(out, Addr{Format: string(f), Address: a})
	}
	return out, nil
}

func (d Deps) createPrivateKeys(x *activity.Exec, intent any) (any, error) {
	var params []wire.PrivateKeyParams
	switch in := intent.(type) {
	case *wire.CreatePrivateKeysIntentV2:
		params = in.PrivateKeys
	case *wire.CreatePrivateKeysIntent:
		params = in.PrivateKeys
	}
	if len(params) == 0 {
		return nil, apierr.Invalid("parameters.privateKeys", "at least one private key is required")
	}
	if err := checkCount("parameters.privateKeys", len(params), MaxPrivateKeysPerOrg, "private keys"); err != nil {
		return nil, err
	}
	for i, p := range params {
		f := fieldIdx("parameters.privateKeys", i)
		if err := checkCount(f+".addressFormats", len(p.AddressFormats), MaxAddressFormatsPerKey,
			"address formats"); err != nil {
			return nil, err
		}
		if err := checkCount(f+".privateKeyTags", len(p.PrivateKeyTags), MaxIDsPerRequest, "tags"); err != nil {
			return nil, err
		}
	}
	n, err := x.Tx.Count(x.Ctx, KindPrivateKey, x.OrgID, MaxPrivateKeysPerOrg)
	if err != nil {
		return nil, apierr.Internalf(err, "counting private keys")
	}
	if n+len(params) > MaxPrivateKeysPerOrg {
		return nil, apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"an organization can have at most %d private keys",
			MaxPrivateKeysPerOrg,
		)
	}
	res := wire.CreatePrivateKeysResultV2{PrivateKeys: make([]wire.PrivateKeyResult, 0, len(params))}
	for i, p := range params {
		f := fieldIdx("parameters.privateKeys", i)
		name, err := directory.CheckName(f+".privateKeyName", p.PrivateKeyName)
		if err != nil {
			return nil, err
		}
		k := &PrivateKey{
			ID:        id.New(),
			OrgID:     x.OrgID,
			Name:      name,
			Curve:     string(p.Curve),
			CreatedAt: x.Now.Add(time.Duration(i)),
			UpdatedAt: x.Now,
		}
		switch p.Curve {
		case "CURVE_SECP256K1", "CURVE_ED25519", "CURVE_P256":
		default:
			return nil, apierr.Invalid(f+".curve", "invalid curve %q", p.Curve)
		}
		dk, err := d.Custodian.NewPrivateKey(k.Curve, k.binding())
		if err != nil {
			return nil, apierr.Internalf(err, "generating key")
		}
		k.PublicKey, k.SealedKey = hexLower(dk.PublicKey), dk.SealedKey
		if k.Addresses, err = keyAddresses(f+".addressFormats", k.Curve, dk.PublicKey, p.AddressFormats); err != nil {
			return nil, err
		}
		if err := savePrivateKey(x.Ctx, x.Tx, k); err != nil {
			return nil, err
		}
		for j, tagID := range p.PrivateKeyTags {
			if err := changeTagMembers(x, tagID, []string{k.ID}, nil); err != nil {
				return nil, apierr.Invalid(
					fieldIdx(f+".privateKeyTags", j),
					"no private key tag %s in this organization",
					tagID,
				)
			}
		}
		res.PrivateKeys = append(
			res.PrivateKeys,
			wire.PrivateKeyResult{PrivateKeyId: k.ID, Addresses: immutableAddrs(k.Addresses)},
		)
	}
	return res, nil
}

func immutableAddrs(as []Addr) []wire.Immutableactivityv1Address {
	out := make([]wire.Immutableactivityv1Address, 0, len(as))
	for _, a := range as {
		out = append(out, wire.Immutableactivityv1Address{Format: wire.AddressFormat(a.Format), Address: a.Address})
	}
	return out
}

func deletePrivateKeys(x *activity.Exec, in *wire.DeletePrivateKeysIntent) (any, error) {
	if len(in.PrivateKeyIds) == 0 {
		return nil, apierr.Invalid("parameters.privateKeyIds", "at least one private key id is required")
	}
	if err := checkCount(
		"parameters.privateKeyIds", len(in.PrivateKeyIds), MaxPrivateKeysPerOrg, "private key ids",
	); err != nil {
		return nil, err
	}
	force := in.DeleteWithoutExport != nil && *in.DeleteWithoutExport
	for i, kid := range in.PrivateKeyIds {
		f := fieldIdx("parameters.privateKeyIds", i)
		k, err := load[PrivateKey](x.Ctx, x.Tx, KindPrivateKey, x.OrgID, kid, "private key")
		if err != nil {
			return nil, apierr.Invalid(f, "no private key %s in this organization", kid)
		}
		if !k.Exported && !force {
			return nil, apierr.New(
				apierr.FailedPrecondition,
				"PRIVATE_KEY_NOT_EXPORTED",
				"%s: private key %s has not been exported; export it first or pass deleteWithoutExport: true",
				f,
				kid,
			)
		}
		tags, err := tagsOf(x, k.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range tags {
			if err := changeTagMembers(x, t, nil, []string{k.ID}); err != nil {
				return nil, err
			}
		}
		if err := x.Tx.Delete(x.Ctx, KindPrivateKey, k.ID); err != nil {
			return nil, apierr.Internalf(err, "deleting private key")
		}
	}
	return wire.DeletePrivateKeysResult{PrivateKeyIds: in.PrivateKeyIds}, nil
}

func tagsOf(x *activity.Exec, keyID string) ([]string, error) {
	return lookupIDs(x.Ctx, x.R, KeyPKTagMember, keyID, KindPrivateKeyTag, x.OrgID)
}

func changeTagMembers(x *activity.Exec, tagID string, add, remove []string) error {
	t, err := load[PrivateKeyTag](x.Ctx, x.Tx, KindPrivateKeyTag, x.OrgID, tagID, "private key tag")
	if err != nil {
		return err
	}
	drop := map[string]bool{}
	for _, k := range remove {
		drop[k] = true
	}
	keys := t.KeyIDs[:0:0]
	seen := map[string]bool{}
	for _, k := range append(append([]string{}, t.KeyIDs...), add...) {
		if !drop[k] && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	t.KeyIDs, t.UpdatedAt = keys, x.Now
	return savePKTag(x.Ctx, x.Tx, t)
}

func checkKeys(x *activity.Exec, field string, ids []string) error {
	if err := checkCount(field, len(ids), MaxPrivateKeysPerOrg, "private key ids"); err != nil {
		return err
	}
	for i, k := range ids {
		if _, err := load[PrivateKey](x.Ctx, x.Tx, KindPrivateKey, x.OrgID, k, "private key"); err != nil {
			return apierr.Invalid(fieldIdx(field, i), "no private key %s in this organization", k)
		}
	}
	return nil
}

func (d Deps) createPKTag(x *activity.Exec, in *wire.CreatePrivateKeyTagIntent) (any, error) {
	name, err := directory.CheckName("parameters.privateKeyTagName", in.PrivateKeyTagName)
	if err != nil {
		return nil, err
	}
	// list_private_key_tags answers every tag, each naming up to MaxPrivateKeysPerOrg keys:
	// counted (no further than the limit) before any key is looked up.
	lim := d.limits(x)
	if err := lim.Check(x.Ctx, x.Tx, KindPrivateKeyTag, x.OrgID, lim.PrivateKeyTagsPerOrg, "private key tags"); err != nil {
		return nil, err
	}
	if err := checkKeys(x, "parameters.privateKeyIds", in.PrivateKeyIds); err != nil {
		return nil, err
	}
	t := &PrivateKeyTag{
		ID:        id.New(),
		OrgID:     x.OrgID,
		Name:      name,
		KeyIDs:    append([]string{}, in.PrivateKeyIds...),
		CreatedAt: x.Now,
		UpdatedAt: x.Now,
	}
	if err := savePKTag(x.Ctx, x.Tx, t); err != nil {
		return nil, err
	}
	return wire.CreatePrivateKeyTagResult{PrivateKeyTagId: t.ID, PrivateKeyIds: t.KeyIDs}, nil
}

func updatePKTag(x *activity.Exec, in *wire.UpdatePrivateKeyTagIntent) (any, error) {
	if err := checkCount("parameters.addPrivateKeyIds", len(in.AddPrivateKeyIds), MaxPrivateKeysPerOrg,
		"private key ids"); err != nil {
		return nil, err
	}
	if err := checkCount("parameters.removePrivateKeyIds", len(in.RemovePrivateKeyIds), MaxPrivateKeysPerOrg,
		"private key ids"); err != nil {
		return nil, err
	}
	t, err := load[PrivateKeyTag](x.Ctx, x.Tx, KindPrivateKeyTag, x.OrgID, in.PrivateKeyTagId, "private key tag")
	if err != nil {
		return nil, apierr.Invalid(
			"parameters.privateKeyTagId",
			"no private key tag %s in this organization",
			in.PrivateKeyTagId,
		)
	}
	if in.NewPrivateKeyTagName != "" {
		if t.Name, err = directory.CheckName("parameters.newPrivateKeyTagName", in.NewPrivateKeyTagName); err != nil {
			return nil, err
		}
		t.UpdatedAt = x.Now
		if err := savePKTag(x.Ctx, x.Tx, t); err != nil {
			return nil, err
		}
	}
	if err := checkKeys(x, "parameters.addPrivateKeyIds", in.AddPrivateKeyIds); err != nil {
		return nil, err
	}
	if err := changeTagMembers(x, t.ID, in.AddPrivateKeyIds, in.RemovePrivateKeyIds); err != nil {
		return nil, err
	}
	return wire.UpdatePrivateKeyTagResult{PrivateKeyTagId: t.ID}, nil
}

func deletePKTags(x *activity.Exec, in *wire.DeletePrivateKeyTagsIntent) (any, error) {
	if len(in.PrivateKeyTagIds) == 0 {
		return nil, apierr.Invalid("parameters.privateKeyTagIds", "at least one private key tag id is required")
	}
	if err := checkCount(
		"parameters.privateKeyTagIds", len(in.PrivateKeyTagIds), MaxIDsPerRequest, "private key tag ids",
	); err != nil {
		return nil, err
	}
	keys := []string{}
	seen := map[string]bool{}
	for i, tid := range in.PrivateKeyTagIds {
		t, err := load[PrivateKeyTag](x.Ctx, x.Tx, KindPrivateKeyTag, x.OrgID, tid, "private key tag")
		if err != nil {
			return nil, apierr.Invalid(
				fieldIdx("parameters.privateKeyTagIds", i),
				"no private key tag %s in this organization",
				tid,
			)
		}
		for _, k := range t.KeyIDs {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		if err := x.Tx.Delete(x.Ctx, KindPrivateKeyTag, t.ID); err != nil {
			return nil, apierr.Internalf(err, "deleting private key tag")
		}
	}
	return wire.DeletePrivateKeyTagsResult{PrivateKeyTagIds: in.PrivateKeyTagIds, PrivateKeyIds: keys}, nil
}

func (k *PrivateKey) toWire(tags []string) wire.PrivateKey {
	addrs := make([]wire.Externaldatav1Address, 0, len(k.Addresses))
	for _, a := range k.Addresses {
		addrs = append(addrs, wire.Externaldatav1Address{Format: wire.AddressFormat(a.Format), Address: a.Address})
	}
	if tags == nil {
		tags = []string{}
	}
	return wire.PrivateKey{
		PrivateKeyId:   k.ID,
		PublicKey:      k.PublicKey,
		PrivateKeyName: k.Name,
		Curve:          wire.Curve(k.Curve),
		Addresses:      addrs,
		PrivateKeyTags: tags,
		CreatedAt:      ts(k.CreatedAt),
		UpdatedAt:      ts(k.UpdatedAt),
		Exported:       k.Exported,
		Imported:       k.Imported,
	}
}

func getPrivateKey(q *activity.Read, in *wire.GetPrivateKeyRequest) (any, error) {
	k, err := load[PrivateKey](q.Ctx, q.R, KindPrivateKey, q.OrgID, in.PrivateKeyId, "private key")
	if err != nil {
		return nil, err
	}
	tags, err := lookupIDs(q.Ctx, q.R, KeyPKTagMember, k.ID, KindPrivateKeyTag, q.OrgID)
	if err != nil {
		return nil, err
	}
	return wire.GetPrivateKeyResponse{PrivateKey: k.toWire(tags)}, nil
}

func listPrivateKeys(q *activity.Read, _ *wire.GetPrivateKeysRequest) (any, error) {
	ks, err := listKind[PrivateKey](q.Ctx, q.R, KindPrivateKey, q.OrgID, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := wire.GetPrivateKeysResponse{PrivateKeys: make([]wire.PrivateKey, 0, len(ks))}
	for _, k := range ks {
		tags, err := lookupIDs(q.Ctx, q.R, KeyPKTagMember, k.ID, KindPrivateKeyTag, q.OrgID)
		if err != nil {
			return nil, err
		}
		out.PrivateKeys = append(out.PrivateKeys, k.toWire(tags))
	}
	return out, nil
}

func listPKTags(q *activity.Read, _ *wire.ListPrivateKeyTagsRequest) (any, error) {
	tags, err := listKind[PrivateKeyTag](q.Ctx, q.R, KindPrivateKeyTag, q.OrgID, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := wire.ListPrivateKeyTagsResponse{PrivateKeyTags: make([]wire.Datav1Tag, 0, len(tags))}
	for _, t := range tags {
		out.PrivateKeyTags = append(
			out.PrivateKeyTags,
			wire.Datav1Tag{TagId: t.ID, TagName: t.Name, TagType: "TAG_TYPE_PRIVATE_KEY",
				CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt)},
		)
	}
	return out, nil
}
