package wire

import (
	"fmt"
	"strconv"
)

// Reasons a FieldError gives.
const (
	ReasonRequired     = "required"      // the field is absent or empty
	ReasonInvalidValue = "invalid value" // the field holds a value its enum does not list
	ReasonRefused      = "refused"       // the field's value is refused for the reason in Value
)

// FieldError names the first field of a request that failed validation.
// Its message is safe to show to the caller.
type FieldError struct {
	Field  string // dotted path, e.g. "parameters.rootUsers[0].userName"
	Reason string // ReasonRequired or ReasonInvalidValue
	Value  string // the rejected value, for ReasonInvalidValue
}

func (e *FieldError) Error() string {
	switch e.Reason {
	case ReasonRequired:
		return e.Field + " is required"
	case ReasonInvalidValue:
		return fmt.Sprintf("invalid value %q for %s", e.Value, e.Field)
	case ReasonRefused:
		return e.Field + ": " + e.Value
	}
	return e.Reason + ": " + e.Field
}

// Refused reports that field's value is refused, saying why (never echoing the value).
func Refused(field, why string) *FieldError {
	return &FieldError{Field: field, Reason: ReasonRefused, Value: why}
}

// Required reports that field is missing.
func Required(field string) *FieldError {
	return &FieldError{Field: field, Reason: ReasonRequired}
}

// InvalidValue reports that field holds a value that is not allowed.
func InvalidValue(field, value string) *FieldError {
	return &FieldError{Field: field, Reason: ReasonInvalidValue, Value: value}
}

// FieldPath names member name under prefix: "parameters" + "curveType" is
// "parameters.curveType"; an empty prefix gives the bare name.
func FieldPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// IndexPath names element i of the list at path: "rootUsers[0]".
func IndexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
