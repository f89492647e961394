// Package users holds the operations on users and user tags: create_users (every version),
// update_user and its single-field variants, delete_users, create/update/delete user tags, and
// the queries get_user, list_users and list_user_tags.
//
// Before policies exist, only root users change users; a user may rename themself and change
// their own e-mail address or phone number. A member of the root quorum cannot be deleted until
// the quorum is changed.
package users
