// Package organizations holds the operations on organizations themselves: creating and deleting
// sub-organizations, renaming, the root quorum, feature flags, and the queries that read them
// (whoami, get_organization, get_organization_configs, list_suborgs).
//
// A sub-organization is created by a root user of a top-level organization and belongs to it;
// it cannot have sub-organizations of its own. Only a root user inside a sub-organization can
// delete it. The root quorum is stored and validated here; the policy engine enforces it.
package organizations
