package secretsmanager_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/secretsmanager"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// TestString reads a key stored the way an operator stores one (pasted
// with a trailing newline) from Secrets Manager on the emulator.
func TestString(t *testing.T) {
	c := secretsmanager.NewClient(awstest.Config(t, nil))
	name := awstest.Prefix(t) + "/anthropic"
	out, err := c.CreateSecret(t.Context(), &sm.CreateSecretInput{Name: aws.String(name), SecretString: aws.String("sk-ant-SECRET\n")})
	if err != nil {
		t.Fatal(err)
	}
	r := secretsmanager.New(c)
	for _, id := range []string{name, aws.ToString(out.ARN)} {
		got, err := r.String(t.Context(), id)
		if err != nil || got != "sk-ant-SECRET" {
			t.Fatalf("String(%s) = %q, %v", id, got, err)
		}
	}
	_, err = r.String(t.Context(), name+"-missing")
	if !errors.Is(err, secretsmanager.ErrNotFound) || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("missing secret: %v", err)
	}
}
