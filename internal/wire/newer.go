package wire

import "slices"

// newerOps are operations newer than the stored swagger files, written by hand from the
// generated types of @turnkey/http 6.6.0 (docs/api-notes.md §2.4). They are appended to
// Ops, marked Superset.
var newerOps = []Op{
	{
		Path:     "delete_secrets",
		Route:    "/public/v1/submit/delete_secrets",
		Kind:     Submit,
		Summary:  "Delete secrets",
		Superset: true,
		Versions: []ActivityVersion{
			{
				Type:         "ACTIVITY_TYPE_DELETE_SECRETS",
				IntentMember: "deleteSecretsIntent",
				NewIntent:    func() Validator { return new(DeleteSecretsIntent) },
			},
		},
		ResultMember: "deleteSecretsResult",
		NewRequest:   func() Validator { return new(DeleteSecretsRequest) },
		NewResponse:  func() any { return new(ActivityResponse) },
	},
	// upsert_gas_usage_config: Turnkey's activity type ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG and
	// its intent and result are in the swagger, but no public path submits it (Turnkey sets gas
	// limits from its dashboard). Latchkey serves it at the path the submit routes' naming gives
	// it (docs/gas-station.md, "Operator configuration").
	{
		Path:     "upsert_gas_usage_config",
		Route:    "/public/v1/submit/upsert_gas_usage_config",
		Kind:     Submit,
		Summary:  "Set the organization's gas sponsorship limits",
		Superset: true,
		Versions: []ActivityVersion{
			{
				Type:         "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG",
				IntentMember: "upsertGasUsageConfigIntent",
				NewIntent:    func() Validator { return new(UpsertGasUsageConfigIntent) },
			},
		},
		ResultMember: "upsertGasUsageConfigResult",
		NewRequest:   func() Validator { return new(UpsertGasUsageConfigRequest) },
		NewResponse:  func() any { return new(ActivityResponse) },
	},
}

// UpsertGasUsageConfigRequest is the body of submit/upsert_gas_usage_config (Latchkey's path for
// the swagger's ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG).
type UpsertGasUsageConfigRequest struct {
	Type              string                     `json:"type"`
	TimestampMs       string                     `json:"timestampMs"`
	OrganizationId    string                     `json:"organizationId"`
	Parameters        UpsertGasUsageConfigIntent `json:"parameters"`
	GenerateAppProofs *bool                      `json:"generateAppProofs,omitempty"`
}

// Validate checks the required fields.
func (x *UpsertGasUsageConfigRequest) Validate(path string) error {
	if x.Type == "" {
		return Required(FieldPath(path, "type"))
	}
	if x.Type != "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG" {
		return InvalidValue(FieldPath(path, "type"), x.Type)
	}
	if x.TimestampMs == "" {
		return Required(FieldPath(path, "timestampMs"))
	}
	if x.OrganizationId == "" {
		return Required(FieldPath(path, "organizationId"))
	}
	return x.Parameters.Validate(FieldPath(path, "parameters"))
}

// DeleteSecretsRequest is the body of submit/delete_secrets (@turnkey/http 6.6.0).
type DeleteSecretsRequest struct {
	Type              string              `json:"type"`
	TimestampMs       string              `json:"timestampMs"`
	OrganizationId    string              `json:"organizationId"`
	Parameters        DeleteSecretsIntent `json:"parameters"`
	GenerateAppProofs *bool               `json:"generateAppProofs,omitempty"`
}

// Validate checks the required fields.
func (x *DeleteSecretsRequest) Validate(path string) error {
	if x.Type == "" {
		return Required(FieldPath(path, "type"))
	}
	if !slices.Contains([]string{"ACTIVITY_TYPE_DELETE_SECRETS"}, x.Type) {
		return InvalidValue(FieldPath(path, "type"), x.Type)
	}
	if x.TimestampMs == "" {
		return Required(FieldPath(path, "timestampMs"))
	}
	if x.OrganizationId == "" {
		return Required(FieldPath(path, "organizationId"))
	}
	return x.Parameters.Validate(FieldPath(path, "parameters"))
}

// DeleteSecretsIntent lists the secrets to delete.
type DeleteSecretsIntent struct {
	SecretIds []string `json:"secretIds"`
}

// Validate checks the required fields.
func (x *DeleteSecretsIntent) Validate(path string) error {
	if x.SecretIds == nil {
		return Required(FieldPath(path, "secretIds"))
	}
	return nil
}

// DeleteSecretsResult lists the deleted secrets.
type DeleteSecretsResult struct {
	SecretIds []string `json:"secretIds"`
}
