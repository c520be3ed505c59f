"""A small inventory for a hardware shop: items, stock levels, orders and a daily report."""

from dataclasses import dataclass, field
from datetime import date


@dataclass
class Item:
    """One kind of thing the shop sells."""

    sku: str
    name: str
    unit_price: float
    stock: int = 0
    reorder_level: int = 5

    def needs_reorder(self):
        """Whether the stock has fallen to the reorder level."""
        return self.stock <= self.reorder_level

    def restock(self, count):
        """Adds `count` units to the stock."""
        if count <= 0:
            raise ValueError("restock count must be positive")
        self.stock += count


@dataclass
class OrderLine:
    """So many units of one item in an order."""

    sku: str
    quantity: int
    unit_price: float

    def line_total(self):
        """The price of this line."""
        return self.quantity * self.unit_price


@dataclass
class Order:
    """A customer's order: its lines and when it was placed."""

    number: int
    customer: str
    placed: date
    lines: list = field(default_factory=list)

    def add_line(self, line):
        """Adds a line to the order."""
        self.lines.append(line)

    def total_price(self):
        """The sum of the order's lines."""
        return sum(line.line_total() for line in self.lines)


class Inventory:
    """Items by SKU, and the orders taken against them."""

    def __init__(self):
        self.items = {}
        self.orders = []

    def add_item(self, item):
        """Adds a new item; its SKU must not be in use."""
        if item.sku in self.items:
            raise KeyError(f"SKU {item.sku} is already in the inventory")
        self.items[item.sku] = item

    def find(self, sku):
        """The item with this SKU, or None."""
        return self.items.get(sku)

    def place_order(self, number, customer, wanted, placed=None):
        """Takes an order of `wanted` ({sku: quantity}) if every item is in stock."""
        placed = placed or date.today()
        for sku, quantity in wanted.items():
            item = self.find(sku)
            if item is None:
                raise KeyError(f"unknown SKU {sku}")
            if item.stock < quantity:
                raise ValueError(f"only {item.stock} of {item.name} left, {quantity} wanted")
        order = Order(number, customer, placed)
        for sku, quantity in wanted.items():
            item = self.items[sku]
            item.stock -= quantity
            order.add_line(OrderLine(sku, quantity, item.unit_price))
        self.orders.append(order)
        return order

    def cancel_order(self, number):
        """Cancels an order and puts its units back in stock."""
        for i, order in enumerate(self.orders):
            if order.number == number:
                for line in order.lines:
                    self.items[line.sku].stock += line.quantity
                del self.orders[i]
                return order
        raise KeyError(f"no order number {number}")

    def to_reorder(self):
        """The items whose stock is at or below their reorder level, by name."""
        return sorted((item for item in self.items.values() if item.needs_reorder()), key=lambda i: i.name)

    def stock_value(self):
        """What the stock on the shelves is worth."""
        return sum(item.stock * item.unit_price for item in self.items.values())

    def revenue(self, day):
        """The total of the orders placed on `day`."""
        return sum(order.total_price() for order in self.orders if order.placed == day)

    def best_sellers(self, count=3):
        """The SKUs sold in the largest quantities, most first."""
        sold = {}
        for order in self.orders:
            for line in order.lines:
                sold[line.sku] = sold.get(line.sku, 0) + line.quantity
        ranked = sorted(sold.items(), key=lambda pair: (-pair[1], pair[0]))
        return [sku for sku, _ in ranked[:count]]

    def daily_report(self, day):
        """A few lines about `day`: orders, revenue, best sellers and what to reorder."""
        orders = [order for order in self.orders if order.placed == day]
        lines = [f"Report for {day.isoformat()}"]
        lines.append(f"Orders: {len(orders)}")
        lines.append(f"Revenue: {self.revenue(day):.2f}")
        best = ", ".join(self.find(sku).name for sku in self.best_sellers())
        lines.append(f"Best sellers: {best or 'none'}")
        low = ", ".join(item.name for item in self.to_reorder())
        lines.append(f"Reorder: {low or 'nothing'}")
        lines.append(f"Stock value: {self.stock_value():.2f}")
        return "\n".join(lines)


def sample_inventory():
    """An inventory with a few items, for trying things out."""
    inv = Inventory()
    inv.add_item(Item("HAM-01", "Claw hammer", 12.50, stock=14))
    inv.add_item(Item("SAW-02", "Hand saw", 30.00, stock=6))
    inv.add_item(Item("SCR-10", "Box of screws", 4.25, stock=80, reorder_level=20))
    inv.add_item(Item("DRL-05", "Cordless drill", 89.90, stock=3, reorder_level=2))
    inv.add_item(Item("TAP-03", "Measuring tape", 7.80, stock=25))
    return inv


if __name__ == "__main__":
    shop = sample_inventory()
    today = date.today()
    shop.place_order(1, "Jane Doe", {"HAM-01": 2, "SCR-10": 5}, today)
    shop.place_order(2, "Sam Roe", {"SAW-02": 1, "TAP-03": 2}, today)
    shop.place_order(3, "Ada Poe", {"DRL-05": 1, "SCR-10": 10}, today)
    print(shop.daily_report(today))
