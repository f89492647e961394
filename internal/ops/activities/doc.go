// Package activities holds the queries over activities: get_activity (the activity exactly as its
// submit returned it) and list_activities (status and type filters, newest first, paginated;
// a page is bounded by its bytes as well as its limit).
package activities
