package testenv

import "k8s.io/apimachinery/pkg/api/resource"

func resourceQuantity() *resource.Quantity {
	q := resource.MustParse("1Gi")
	return &q
}
