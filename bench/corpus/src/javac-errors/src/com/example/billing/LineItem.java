package com.example.billing;

public class LineItem {
    private final String description;
    private final int quantity;
    private final long unitCents;

    public LineItem(String description, int quantity, long unitCents) {
        this.description = description;
        this.quantity = quantity;
        this.unitCents = unitCents;
    }

    public long subtotal() {
        return quantity * unitCents;
    }

    public String label() {
        return description.toUpperCase() + " x" + quantity;
    }

    public boolean isFree() {
        return unitCents == 0 || discount.isFull();
    }
}
