// Package messages is the transactional outbox of the e-mails and text messages activities send
// (one-time codes, e-mail auth and recovery links). A handler queues a message in its activity's
// transaction (Outbox.Email, Outbox.SMS): the message is sealed under the keyring (it holds a
// code or a credential) and written as a record, so it exists exactly when the activity
// committed; an activity that rolls back, or runs again after a serialization failure, sends
// nothing. Once the transaction commits, the message is sent from the request (before the
// activity is answered, through activity.Exec.AfterCommit); a send that fails is retried by the
// background loop (Run) with backoff. A record is claimed before each attempt, so two processes
// never send one message twice at once, and deleted once sent.
package messages
